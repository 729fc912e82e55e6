package receiver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers/doku"
)

// End-to-end tests of a signature over the request's path (DOKU signs its
// notification URL's path, which a proxy may rewrite), on the harness of
// receiver_test.go.

const (
	dokuClientID = "MCH-0001-e2e-20250602"
	dokuKey      = "SK-e2e-new-not-real"
	dokuKeyOld   = "SK-e2e-old-not-real"
	// dokuPublicPath is the notification URL's path as registered with
	// DOKU; a proxy rewrites it to webhookd's /webhooks/doku.
	dokuPublicPath = "/payments/doku/notify"
)

func newDoku(t *testing.T, path string, keys ...string) *doku.Adapter {
	a, err := doku.New(dokuClientID, keys, doku.WithNotificationPath(path))
	require.NoError(t, err)
	return a
}

func TestDokuEndToEnd(t *testing.T) {
	d := newDoku(t, doku.DefaultNotificationPath, dokuKey, dokuKeyOld)
	h := newHarness(t, withProviders(d))
	body := fixture(t, "doku", "va_bca_success.json")
	const key = "doku:WH-INV-20250602-0041:VIRTUAL_ACCOUNT:SUCCESS"

	t.Run("forwarded once with the contract's headers, DOKU's retry replayed", func(t *testing.T) {
		require.Equal(t, http.StatusCreated, h.signed(d, body).status)
		// DOKU's retry 30 minutes later, new Request-Id, whether or not it
		// is signed afresh.
		for _, at := range []time.Time{time.Now(), time.Now().Add(-30 * time.Minute)} {
			r := h.send("doku", body, dokuHeader(dokuKey, "4b1f7c2e-9d03-4a5b-8e61-2f7c9a0d3b58", at, doku.DefaultNotificationPath, body))
			require.Equal(t, http.StatusCreated, r.status)
			require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0], "the raw body, byte for byte")
		require.Equal(t, key, got.Header.Get("Idempotency-Key"))
		require.Equal(t, "doku", got.Header.Get("Webhook-Provider"))
		require.Equal(t, "WH-INV-20250602-0041:VIRTUAL_ACCOUNT:SUCCESS", got.Header.Get("Webhook-Event-Id"))
		require.Equal(t, "VIRTUAL_ACCOUNT.SUCCESS", got.Header.Get("Webhook-Event-Type"))
		require.Empty(t, got.Header.Get(doku.HeaderSignature), "the signature is not forwarded")
		require.Equal(t, dedupe.Completed, h.state(key))
	})

	t.Run("rotation: signed with the old key", func(t *testing.T) {
		before := h.down.calls.Load()
		b := fixture(t, "doku", "credit_card_success.json")
		r := h.send("doku", b, dokuHeader(dokuKeyOld, "0c7e2a94-5b3d-4f18-a6c9-8d1e4b7f2a03", time.Now(), doku.DefaultNotificationPath, b))
		require.Equal(t, http.StatusCreated, r.status)
		keys, types := h.forwarded()
		require.Equal(t, []string{"doku:WH-INV-20250602-0043:CREDIT_CARD:SUCCESS"}, keys[before:])
		require.Equal(t, []string{"CREDIT_CARD.SUCCESS"}, types[before:])
	})

	t.Run("forged, foreign, stale or mis-targeted notifications are 401, store untouched", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		b := fixture(t, "doku", "emoney_ovo_success.json")
		const rid = "6e3a9f15-2c7b-4d08-b4e2-9a1f5c8d7e36"
		now := time.Now()
		foreign := dokuHeader(dokuKey, rid, now, doku.DefaultNotificationPath, b)
		foreign.Set(doku.HeaderClientID, "MCH-0001-someone-else")
		for name, tc := range map[string]struct {
			body   []byte
			header http.Header
		}{
			"unsigned":                   {b, nil},
			"amount edited":              {bytes.Replace(b, []byte(`42000`), []byte(`42001`), 1), dokuHeader(dokuKey, rid, now, doku.DefaultNotificationPath, b)},
			"unknown key":                {b, dokuHeader("SK-someone-else", rid, now, doku.DefaultNotificationPath, b)},
			"another client":             {b, foreign},
			"signed for another path":    {b, dokuHeader(dokuKey, rid, now, dokuPublicPath, b)},
			"older than the tolerance":   {b, dokuHeader(dokuKey, rid, now.Add(-25*time.Hour), doku.DefaultNotificationPath, b)},
			"ahead beyond the tolerance": {b, dokuHeader(dokuKey, rid, now.Add(25*time.Hour), doku.DefaultNotificationPath, b)},
		} {
			r := h.send("doku", tc.body, tc.header)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
			require.NotContains(t, r.body, dokuKey, name)
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
	})
}

// TestDokuBehindRewritingProxy: the notification URL registered with DOKU is
// https://shop.example/payments/doku/notify; a proxy rewrites that path to
// webhookd's /webhooks/doku. DOKU signs the registered path, so webhookd
// configured with it (WEBHOOKD_DOKU_NOTIFICATION_PATH) verifies what
// arrives on its own route, and an adapter left at the default refuses it.
func TestDokuBehindRewritingProxy(t *testing.T) {
	d := newDoku(t, dokuPublicPath, dokuKey)
	h := newHarness(t, withProviders(d))
	local, err := url.Parse(h.srv.URL)
	require.NoError(t, err)
	var inPath, outPath atomic.Value
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		inPath.Store(r.In.URL.Path)
		r.SetURL(local)
		r.Out.URL.Path = "/webhooks/doku"
		outPath.Store(r.Out.URL.Path)
	}})
	t.Cleanup(proxy.Close)
	post := func(body []byte, header http.Header) (int, string) {
		req, err := http.NewRequest(http.MethodPost, proxy.URL+dokuPublicPath, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = header
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
	}

	body := fixture(t, "doku", "va_mandiri_success.json")
	signed, err := d.Sign(body)
	header := signed.Header
	require.NoError(t, err)
	require.Equal(t, dokuHeader(dokuKey, header.Get(doku.HeaderRequestID), mustTime(t, header.Get(doku.HeaderTimestamp)), dokuPublicPath, body), header,
		"replay signs for the registered path")
	status, replayed := post(body, header)
	require.Equal(t, http.StatusCreated, status)
	require.Empty(t, replayed)
	require.Equal(t, dokuPublicPath, inPath.Load(), "DOKU posted to the registered path")
	require.Equal(t, "/webhooks/doku", outPath.Load(), "webhookd saw its own route, not the signed path")
	status, replayed = post(body, header.Clone())
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "true", replayed)
	require.EqualValues(t, 1, h.down.calls.Load())
	require.Equal(t, "doku:WH-INV-20250602-0042:VIRTUAL_ACCOUNT:SUCCESS", h.down.got[0].Header.Get("Idempotency-Key"))

	// Signed for the local route instead, as a misconfigured sender or an
	// attacker replaying elsewhere would: refused.
	other := fixture(t, "doku", "credit_card_failed.json")
	status, _ = post(other, dokuHeader(dokuKey, "2d8b4f61-a3c9-4e07-9b15-7c0e6a2f8d94", time.Now(), doku.DefaultNotificationPath, other))
	require.Equal(t, http.StatusUnauthorized, status)
	require.EqualValues(t, 1, h.down.calls.Load())

	// The same setup without WEBHOOKD_DOKU_NOTIFICATION_PATH refuses DOKU's
	// genuine notification.
	h2 := newHarness(t, withProviders(newDoku(t, doku.DefaultNotificationPath, dokuKey)))
	r := h2.send("doku", body, header)
	require.Equal(t, http.StatusUnauthorized, r.status)
}

// dokuHeader is the four headers DOKU sends for body, signed with key at t
// for the notification path target.
func dokuHeader(key, requestID string, t time.Time, target string, body []byte) http.Header {
	ts := t.UTC().Format(doku.TimestampLayout)
	h := http.Header{}
	h.Set(doku.HeaderClientID, dokuClientID)
	h.Set(doku.HeaderRequestID, requestID)
	h.Set(doku.HeaderTimestamp, ts)
	h.Set(doku.HeaderSignature, doku.SignatureHeader(key, dokuClientID, requestID, ts, target, body))
	return h
}

func mustTime(t *testing.T, s string) time.Time {
	ts, err := time.Parse(doku.TimestampLayout, s)
	require.NoError(t, err)
	return ts
}
