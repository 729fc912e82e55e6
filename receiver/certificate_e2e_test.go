package receiver_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
)

// End-to-end tests of a verification that fetches the sender's certificate
// (PayPal's transmission signatures), on the harness of receiver_test.go
// against a stand-in of PayPal's certificate host.

func newPaypal(t *testing.T, srv *paypaltest.Server) *paypal.Adapter {
	a, err := paypal.New([]string{paypalWebhook}, srv.Options()...)
	require.NoError(t, err)
	return a
}

// paypalSend sends body as PayPal would, signed for the certificate cert,
// in a transmission of its own.
func (h *harness) paypalSend(srv *paypaltest.Server, cert, transmission string, body []byte) reply {
	h.t.Helper()
	header := srv.Sign(cert, paypalWebhook, transmission, time.Now(), body)
	header.Set("Content-Type", "application/json")
	return h.sendAs(paypal.Name, body, header)
}

func TestPaypalEndToEnd(t *testing.T) {
	srv := paypaltest.NewServer(t)
	h := newHarness(t, withProviders(newPaypal(t, srv)))
	names := []string{"payment_capture_completed.json", "payment_capture_refunded.json", "checkout_order_approved.json", "payment_capture_denied.json"}

	t.Run("certificate fetched once for many deliveries, each event forwarded once", func(t *testing.T) {
		for i := range 3 {
			for _, name := range names {
				r := h.paypalSend(srv, paypaltest.Good, name+"-attempt-"+string(rune('1'+i)), fixture(t, "paypal", name))
				require.Equal(t, http.StatusCreated, r.status, "%s attempt %d: %s", name, i, r.body)
				require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true")
			}
		}
		require.EqualValues(t, 1, srv.Fetches.Load(), "one certificate fetch for %d deliveries", 3*len(names))
		require.EqualValues(t, len(names), h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, fixture(t, "paypal", names[0]), h.down.bodies[0], "the raw body, byte for byte")
		require.Equal(t, "paypal:WH-7WD58212KL104362H-4RH63195UV8822031", got.Header.Get("Idempotency-Key"))
		require.Equal(t, "PAYMENT.CAPTURE.COMPLETED", got.Header.Get("Webhook-Event-Type"))
		require.Empty(t, got.Header.Get(paypal.HeaderTransmissionSig), "PayPal's headers are not forwarded")
	})

	t.Run("refused certificates are 401, nothing stored", func(t *testing.T) {
		body := []byte(strings.Replace(string(fixture(t, "paypal", names[0])), "WH-7WD58212KL104362H", "WH-0NEW0000000000000", 1))
		for _, cert := range []string{paypaltest.Expired, paypaltest.Foreign, paypaltest.Untrusted, paypaltest.Missing} {
			r := h.paypalSend(srv, cert, "tx-"+cert, body)
			require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", cert, r.body)
			require.Empty(t, r.header.Get("Retry-After"))
		}
		header := srv.Sign(paypaltest.Good, paypalWebhook, "tx-host", time.Now(), body)
		header.Set(paypal.HeaderCertURL, "https://certs.example.com/v1/notifications/certs/"+paypaltest.Good)
		before := srv.Fetches.Load()
		r := h.sendAs(paypal.Name, body, header)
		require.Equal(t, http.StatusUnauthorized, r.status, "cert host not allowed: %s", r.body)
		require.Contains(t, r.body, "not on an allowed host")
		require.Equal(t, before, srv.Fetches.Load(), "a host not allowed is never asked")
		require.Zero(t, h.state("paypal:WH-0NEW0000000000000-4RH63195UV8822031"))
	})

	t.Run("certificate server down is 503 with Retry-After, not fetched again for 30s, then the retry is forwarded", func(t *testing.T) {
		fresh := paypaltest.NewServer(t) // a new adapter and certificate URL: nothing cached
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		ad, err := paypal.New([]string{paypalWebhook}, append(fresh.Options(), paypal.WithClock(clock))...)
		require.NoError(t, err)
		h := newHarness(t, withProviders(ad))
		body := fixture(t, "paypal", names[1])
		fresh.Down.Store(true)
		r := h.paypalSend(fresh, paypaltest.Good, "tx-down", body)
		require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
		require.NotEmpty(t, r.header.Get("Retry-After"))
		require.Zero(t, h.down.calls.Load())
		require.Zero(t, h.state("paypal:WH-1AB29874QX5563120-8TT47721MN3390442"), "no key claimed")
		fresh.Down.Store(false)
		r = h.paypalSend(fresh, paypaltest.Good, "tx-retry", body)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "within 30s of the failure: %s", r.body)
		require.EqualValues(t, 1, fresh.Fetches.Load())
		mu.Lock()
		now = now.Add(paypal.FailedFetchPause)
		mu.Unlock()
		r = h.paypalSend(fresh, paypaltest.Good, "tx-retry-2", body)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		require.EqualValues(t, 1, h.down.calls.Load())
		require.EqualValues(t, 2, fresh.Fetches.Load())
	})
}
