package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/spec"
)

// TestReplacedProvidersEndToEnd: stripe and paddle, served by their
// built-in specs, take every fixture signed as the gateways sign it
// (spec.SignBuiltin): each is forwarded once under the key the Go adapters
// used, and a retry signed a minute later is answered as a replay, never
// forwarded again or answered 422.
func TestReplacedProvidersEndToEnd(t *testing.T) {
	const paddleSecret = "pdl_ntfset_e2e_replaced"
	c := newCore(t)
	srv := startServe(t, map[string]string{
		"WEBHOOKD_DATA_DIR":       filepath.Join(t.TempDir(), "data"),
		"WEBHOOKD_DOWNSTREAM_URL": c.URL,
		"WEBHOOKD_STRIPE_SECRETS": testSecret,
		"WEBHOOKD_PADDLE_SECRETS": paddleSecret,
	})
	for _, gw := range []struct {
		name, header, id string
		sign             func(t time.Time, body []byte) string
	}{
		{"stripe", "Stripe-Signature", "id", func(at time.Time, body []byte) string { return stripeSignature(t, testSecret, at, body) }},
		{"paddle", "Paddle-Signature", "event_id", func(at time.Time, body []byte) string { return paddleSignature(t, paddleSecret, at, body) }},
	} {
		paths, err := filepath.Glob(filepath.Join("..", "..", "fixtures", gw.name, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, paths)
		for _, p := range paths {
			body, err := os.ReadFile(p)
			require.NoError(t, err)
			var ev map[string]any
			require.NoError(t, json.Unmarshal(body, &ev), p)
			key := gw.name + ":" + ev[gw.id].(string)
			post := func(at time.Time) *http.Response {
				req, err := http.NewRequest(http.MethodPost, srv.url+"/webhooks/"+gw.name, bytes.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(gw.header, gw.sign(at, body))
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp
			}
			now := time.Now()
			require.Equal(t, http.StatusCreated, post(now).StatusCode, p)
			require.Equal(t, 1, c.count(key), "%s: forwarded once as %s", p, key)
			retry := post(now.Add(time.Minute))
			require.Equal(t, http.StatusCreated, retry.StatusCode, "%s: the retry is replayed", p)
			require.Equal(t, 1, c.count(key), "%s: the retry is not forwarded again", p)
		}
	}
}

// stripeSignature is the Stripe-Signature header of body signed with
// secret at time at, as the built-in stripe spec signs it.
func stripeSignature(t testing.TB, secret string, at time.Time, body []byte) string {
	t.Helper()
	h, err := spec.SignBuiltin("stripe", secret, at, body)
	require.NoError(t, err)
	return h.Get("Stripe-Signature")
}

// paddleSignature is the Paddle-Signature header of body signed with
// secret at time at, as the built-in paddle spec signs it.
func paddleSignature(t testing.TB, secret string, at time.Time, body []byte) string {
	t.Helper()
	h, err := spec.SignBuiltin("paddle", secret, at, body)
	require.NoError(t, err)
	return h.Get("Paddle-Signature")
}
