package stripe_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/stripe"
)

func TestSignatureHeaderVectors(t *testing.T) {
	tests := []struct {
		secret string
		want   string
	}{
		{vecSecret, "t=1700000000,v1=" + vecV1},
		{vecSecretRolled, "t=1700000000,v1=" + vecV1Rolled},
	}
	for _, tt := range tests {
		t.Run(tt.secret, func(t *testing.T) {
			require.Equal(t, tt.want, stripe.SignatureHeader(tt.secret, time.Unix(vecT, 0), []byte(vecBody)))
		})
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	now := time.Unix(1727000100, 0)
	a := newAdapter(t, now, vecSecretRolled, vecSecret)
	newOnly := newAdapter(t, now, vecSecretRolled)
	oldOnly := newAdapter(t, now, vecSecret)
	var signer providers.Provider = a

	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	paths = append(paths, docsExample)
	require.NotEmpty(t, paths)
	for _, path := range append(paths, "") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			body := []byte(vecBody)
			if path != "" {
				body, err = os.ReadFile(path)
				require.NoError(t, err)
			}
			orig := append([]byte(nil), body...)

			signed, err := providers.Sign(signer, body)
			sent, h := signed.Body, signed.Header
			require.NoError(t, err)
			require.Equal(t, orig, sent, "Sign must not change the body")
			require.Equal(t, http.Header{stripe.HeaderName: {stripe.SignatureHeader(vecSecretRolled, now, body)}}, h)

			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}))
			require.NoError(t, newOnly.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}), "Sign uses the first secret")
			require.ErrorIs(t, oldOnly.Verify(context.Background(), providers.Delivery{Header: h, Body: sent}), stripe.ErrNoValidSignature)

			tampered := append([]byte(nil), sent...)
			tampered[len(tampered)/2] ^= 0x01
			require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: tampered}), stripe.ErrNoValidSignature)
		})
	}
}

func TestSignWithoutSecrets(t *testing.T) {
	var a stripe.Adapter
	_, err := a.Sign([]byte(vecBody))
	require.Error(t, err)
}
