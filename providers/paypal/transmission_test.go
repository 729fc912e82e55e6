package paypal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
)

// TestTransmissionWindow: PAYPAL-TRANSMISSION-TIME must be an RFC 3339
// time within the tolerance of now, either way; it is checked before the
// certificate is fetched.
func TestTransmissionWindow(t *testing.T) {
	srv := paypaltest.NewServer(t)
	now := time.Now().Truncate(time.Second) // the fake's certificates are valid around now
	body := readFixture(t, "payment_capture_completed.json")
	for _, tt := range []struct {
		name      string
		tolerance time.Duration // 0: the default
		sent      time.Time
		err       error
	}{
		{"now", 0, now, nil},
		{"at the default edge", 0, now.Add(-paypal.DefaultTolerance), nil},
		{"past the default", 0, now.Add(-paypal.DefaultTolerance - time.Second), paypal.ErrTransmissionTime},
		{"in the future within it", 0, now.Add(time.Hour), nil},
		{"too far in the future", 0, now.Add(paypal.DefaultTolerance + time.Second), paypal.ErrTransmissionTime},
		{"shorter tolerance", 10 * time.Minute, now.Add(-11 * time.Minute), paypal.ErrTransmissionTime},
		{"within a shorter tolerance", 10 * time.Minute, now.Add(-9 * time.Minute), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv.Fetches.Store(0)
			a := newAdapter(t, srv, paypal.WithClock(func() time.Time { return now }), paypal.WithTolerance(tt.tolerance))
			h := srv.Sign(paypaltest.Good, webhookID, "tx-"+tt.name, tt.sent, body)
			err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
			if tt.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.err)
			require.Zero(t, srv.Fetches.Load(), "refused before any fetch")
		})
	}
	t.Run("not an RFC 3339 time", func(t *testing.T) {
		a := newAdapter(t, srv, paypal.WithClock(func() time.Time { return now }))
		h := srv.Sign(paypaltest.Good, webhookID, "tx-x", now, body)
		h.Set(paypal.HeaderTransmissionTime, now.Format(time.RFC1123))
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrTransmissionTime)
	})
}

// TestTransmissionBoundToOneBody: a transmission id verified with one body
// refuses any other body (whatever its CRC-32: here another genuinely
// signed one), in the same adapter, until the entry expires with the window
// or is evicted by newer transmissions.
func TestTransmissionBoundToOneBody(t *testing.T) {
	srv := paypaltest.NewServer(t)
	now := time.Now()
	clock := now
	a := newAdapter(t, srv, paypal.WithClock(func() time.Time { return clock }), paypal.WithTolerance(time.Hour), paypal.WithTransmissionCache(2))
	one := readFixture(t, "payment_capture_completed.json")
	two := readFixture(t, "payment_capture_denied.json")
	sign := func(id string, body []byte) {
		t.Helper()
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, id, now, body), Body: body}))
	}

	sign("tx-1", one)
	sign("tx-1", one) // a retry of the same transmission
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", now, two), Body: two}), paypal.ErrTransmissionReused)
	sign("tx-2", two) // another transmission is free

	// Two newer transmissions evict tx-1: the memory is bounded, and an
	// evicted transmission can be reused (the window still bounds it).
	sign("tx-3", one)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", now, two), Body: two}), "tx-1 was evicted")
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-3", now, two), Body: two}), paypal.ErrTransmissionReused, "the most recent are kept")

	// An entry lives until its transmission time plus the tolerance, when
	// the window refuses the transmission anyway.
	clock = now.Add(time.Hour + time.Second)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-3", now, two), Body: two}), paypal.ErrTransmissionTime)
}
