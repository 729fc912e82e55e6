package requestlog_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/redrive"
	"github.com/webhookd/webhookd/requestlog"
)

const secret = "whsec_requestlog"

// TestEveryRequestIsLogged sends the mix through a real receiver on
// LMDB: forwarded, replayed, forged, unknown route, a core that answers 503
// (the key is released, so only the request log remembers it) and one that
// rejects with 422; then reads it back through GET /api/requests.
func TestEveryRequestIsLogged(t *testing.T) {
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	var coreStatus atomic.Int32
	coreStatus.Store(200)
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(coreStatus.Load()))
	}))
	t.Cleanup(core.Close)
	fwd, err := dispatch.New(dispatch.Options{URL: core.URL, Timeout: time.Second, Retries: 0})
	require.NoError(t, err)
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(ad))
	rlog := requestlog.New(store, requestlog.Options{Interval: time.Hour})
	h, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 1 << 16, OnDelivery: rlog.Observe})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	post := func(route string, body []byte, signed bool) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/"+route, bytes.NewReader(body))
		require.NoError(t, err)
		if signed {
			req.Header.Set("Stripe-Signature", stripeSignature(t, secret, time.Now(), body))
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	ev := func(id string) []byte {
		return []byte(`{"id":"` + id + `","type":"charge.succeeded","object":"event","data":{"object":{"amount":1,"secret_note":"do-not-log"}}}`)
	}
	require.Equal(t, 200, post("stripe", ev("evt_ok"), true))
	require.Equal(t, 200, post("stripe", ev("evt_ok"), true))
	require.Equal(t, 401, post("stripe", ev("evt_forged"), false))
	require.Equal(t, 404, post("nosuch", ev("evt_x"), true))
	coreStatus.Store(503)
	require.Equal(t, 503, post("stripe", ev("evt_down"), true))
	coreStatus.Store(422)
	require.Equal(t, 422, post("stripe", ev("evt_rejected"), true))
	rlog.Close() // writes what waits

	ah, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd}, Requests: store})
	require.NoError(t, err)
	get := func(query string) (int, string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/api/requests"+query, nil)
		req.RemoteAddr = "127.0.0.1:5000"
		ah.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := get("")
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "do-not-log", "no body is kept")
	var page struct {
		Requests []map[string]any `json:"requests"`
		Next     string           `json:"next"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Empty(t, page.Next)
	type seen struct{ source, provider, outcome, reason, key string }
	var got []seen
	for _, e := range page.Requests {
		k, _ := e["event_key"].(string)
		got = append(got, seen{e["source"].(string), e["provider"].(string), e["outcome"].(string), e["reason"].(string), k})
		for _, f := range []string{"time", "status", "size", "remote_addr"} {
			require.Contains(t, e, f)
		}
	}
	require.Equal(t, []seen{
		{"stripe", "stripe", "core_rejected", "", "evt_rejected"},
		{"stripe", "stripe", "unavailable", "", "evt_down"},
		{"nosuch", "", "not_found", "unknown_source", ""},
		{"stripe", "stripe", "unauthorized", "signature_missing", ""},
		{"stripe", "stripe", "replayed", "", "evt_ok"},
		{"stripe", "stripe", "forwarded", "", "evt_ok"},
	}, got, "newest first; the 503's key is there though its record is gone")

	code, body = get("?outcome=unauthorized&reason=signature_missing&source=stripe")
	require.Equal(t, 200, code)
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Requests, 1)

	code, body = get("?limit=2")
	require.Equal(t, 200, code)
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Requests, 2)
	require.NotEmpty(t, page.Next)
	code, _ = get("?limit=2&after=" + page.Next)
	require.Equal(t, 200, code)

	for _, q := range []string{"?limit=0", "?limit=1001", "?after=zz"} {
		code, body = get(q)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", q, body)
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
