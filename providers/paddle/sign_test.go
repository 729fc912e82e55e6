package paddle_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paddle"
)

func TestSignatureHeaderVectors(t *testing.T) {
	require.Equal(t, vecGoHeader, paddle.SignatureHeader(vecGoSecret, time.Unix(vecGoTS, 0), []byte(vecGoBody)))
	require.Equal(t, vecNodeHeader, paddle.SignatureHeader(vecNodeSecret, time.Unix(vecNodeTS, 0), []byte(vecNodeBody)))
}

// TestSignUsesTheFirstSecret: replay signs with the first configured
// secret, and what it signs verifies while a tampered copy does not.
func TestSignUsesTheFirstSecret(t *testing.T) {
	now := time.Unix(1748855667, 0)
	a := newAdapter(t, now, vecPySecretGood, vecGoSecret)
	newOnly := newAdapter(t, now, vecPySecretGood)
	oldOnly := newAdapter(t, now, vecGoSecret)
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			body := readFixture(t, name)
			signed, err := a.Sign(body)
			sent, h := signed.Body, signed.Header
			require.NoError(t, err)
			require.Equal(t, body, sent)
			require.Equal(t, http.Header{paddle.HeaderName: {paddle.SignatureHeader(vecPySecretGood, now, body)}}, h)
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}))
			require.NoError(t, newOnly.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}))
			require.ErrorIs(t, oldOnly.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}), paddle.ErrNoValidSignature)
		})
	}
}

func TestSignWithoutSecrets(t *testing.T) {
	var a paddle.Adapter
	_, err := a.Sign([]byte(vecGoBody))
	require.Error(t, err)
}
