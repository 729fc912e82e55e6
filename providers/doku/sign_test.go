package doku_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/doku"
)

// TestSignForTheNotificationPath: replay signs with the configured client
// id, the first secret key and the configured notification path, with the
// four headers DOKU sends, and a fresh Request-Id each time.
func TestSignForTheNotificationPath(t *testing.T) {
	now := time.Date(2025, 6, 2, 3, 24, 30, 0, time.FixedZone("WIB", 7*3600))
	const path = "/payments/doku/notify"
	a := newAdapterKeys(t, now, []string{"SK-NEW-NOT-REAL", vecSecret}, doku.WithNotificationPath(path))
	newOnly := newAdapterKeys(t, now, []string{"SK-NEW-NOT-REAL"}, doku.WithNotificationPath(path))
	oldOnly := newAdapterKeys(t, now, []string{vecSecret}, doku.WithNotificationPath(path))
	localPath := newAdapterKeys(t, now, []string{"SK-NEW-NOT-REAL"}, doku.WithNotificationPath(doku.DefaultNotificationPath))
	seen := map[string]bool{}
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			body := readFixture(t, name)
			signed, err := a.Sign(body)
			sent, h := signed.Body, signed.Header
			require.NoError(t, err)
			require.Equal(t, body, sent)
			require.Len(t, h, 4)
			require.Equal(t, vecClientID, h.Get(doku.HeaderClientID))
			require.Equal(t, "2025-06-01T20:24:30Z", h.Get(doku.HeaderTimestamp), "UTC, to the second")
			id := h.Get(doku.HeaderRequestID)
			require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
			require.False(t, seen[id], "a fresh Request-Id per notification")
			seen[id] = true
			require.Equal(t, doku.SignatureHeader("SK-NEW-NOT-REAL", vecClientID, id, "2025-06-01T20:24:30Z", path, body), h.Get(doku.HeaderSignature))

			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}))
			require.NoError(t, newOnly.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}), "Sign uses the first key")
			require.ErrorIs(t, oldOnly.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}), doku.ErrNoValidSignature)
			require.ErrorIs(t, localPath.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}), doku.ErrNoValidSignature, "signed for the registered path, not the local route")
		})
	}
}

func TestSignWithoutKeys(t *testing.T) {
	var a doku.Adapter
	_, err := a.Sign([]byte(vecBody))
	require.Error(t, err)
}
