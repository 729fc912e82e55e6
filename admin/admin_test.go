package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/redrive"
)

// downstream is a core service whose answer the test sets, and which keeps
// what it received.
type downstream struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	got    []*http.Request
	bodies []string
}

func newDownstream(t *testing.T) *downstream {
	d := &downstream{}
	d.status.Store(http.StatusOK)
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.got, d.bodies = append(d.got, r), append(d.bodies, string(b))
		d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(d.status.Load()))
		_, _ = io.WriteString(w, `{"core":"`+http.StatusText(int(d.status.Load()))+`"}`)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *downstream) last() (*http.Request, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) == 0 {
		return nil, ""
	}
	return d.got[len(d.got)-1], d.bodies[len(d.bodies)-1]
}

type fixture struct {
	store *lmdb.Store
	down  *downstream
	srv   *httptest.Server
	token string
}

func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	down := newDownstream(t)
	fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: 2 * time.Second, Retries: 0})
	require.NoError(t, err)
	h, err := admin.New(admin.Config{
		Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd}, Token: token,
		Metrics:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics\n") }),
		Providers: []string{"stripe", "xendit"},
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{store: store, down: down, srv: srv, token: token}
}

// seed writes a record the way a delivery does: claimed with its request,
// then finished as st (0 leaves it IN_FLIGHT).
func (f *fixture) seed(t *testing.T, key string, st dedupe.State, req *dedupe.Request) {
	t.Helper()
	ctx := context.Background()
	l, _, err := f.store.Claim(ctx, key, "fp", req)
	require.NoError(t, err)
	switch st {
	case dedupe.Completed:
		require.NoError(t, f.store.Complete(ctx, l, dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}))
	case dedupe.Failed:
		require.NoError(t, f.store.Fail(ctx, l, dedupe.Response{Status: 422, ContentType: "application/json", Body: []byte(`{"error":"unknown customer"}`)}))
	}
}

func stripeRequest(id string) *dedupe.Request {
	return dedupe.NewRequest("application/json; charset=utf-8", "charge.failed",
		[]byte(`{"id":"`+id+`","type":"charge.failed","data":{"object":{"amount":1200}}}`), true)
}

// do sends a request; auth "bearer" sends the token, "" nothing.
func (f *fixture) do(t *testing.T, method, path string, auth bool, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	require.NoError(t, err)
	if auth && f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type listAnswer struct {
	Records []map[string]any `json:"records"`
	Next    string           `json:"next"`
}

func keysOf(t *testing.T, body string) ([]string, string) {
	t.Helper()
	var a listAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a), body)
	var keys []string
	for _, r := range a.Records {
		keys = append(keys, r["key"].(string))
	}
	return keys, a.Next
}

// Every admin route of the contract, with and without credentials.
func TestAuth(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	f.seed(t, "stripe:evt_1", dedupe.Completed, stripeRequest("evt_1"))
	cases := []struct {
		method, path string
		want         int
	}{
		{"GET", "/", http.StatusUnauthorized},
		{"GET", "/records/stripe:evt_1", http.StatusUnauthorized},
		{"GET", "/api/records", http.StatusUnauthorized},
		{"GET", "/api/records/stripe:evt_1", http.StatusUnauthorized},
		{"DELETE", "/api/records/stripe:evt_1", http.StatusUnauthorized},
		{"POST", "/api/records/stripe:evt_1/redrive", http.StatusUnauthorized},
		{"POST", "/records/stripe:evt_1/delete", http.StatusUnauthorized},
		{"GET", "/metrics", http.StatusUnauthorized},
		{"GET", "/healthz", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := f.do(t, tc.method, tc.path, false, nil)
			require.Equal(t, tc.want, resp.StatusCode, body)
			require.Empty(t, resp.Header.Get("Location"), "never a redirect")
			resp, _ = f.do(t, tc.method, tc.path, false, map[string]string{"Authorization": "Bearer wrong"})
			require.Equal(t, tc.want, resp.StatusCode)
		})
	}
	resp, body := f.do(t, "GET", "/", false, map[string]string{"Accept": "text/html"})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, `action="/signin"`, "a browser gets the sign-in form")
	resp, body = f.do(t, "GET", "/api/records", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, body = f.do(t, "GET", "/metrics", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "metrics\n", body)
}

// The sign-in form trades the token for an HttpOnly, SameSite=Strict
// session cookie that opens every route; a wrong token gets 401.
func TestSignIn(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	post := func(form url.Values, hdr map[string]string) *http.Response {
		req, err := http.NewRequest("POST", f.srv.URL+"/signin", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	resp := post(url.Values{"token": {"guess"}}, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, resp.Cookies())

	resp = post(url.Values{"token": {"s3cret-token"}, "next": {"https://evil.example/"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/", resp.Header.Get("Location"), "no open redirect")
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.NotContains(t, c.Value, "s3cret-token", "the cookie is not the token")

	resp, body := f.do(t, "GET", "/api/records", false, map[string]string{"Cookie": c.Name + "=" + c.Value})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	resp, _ = f.do(t, "GET", "/api/records", false, map[string]string{"Cookie": c.Name + "=forged"})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// A sign-in posted from another site is refused too (login CSRF).
	resp = post(url.Values{"token": {"s3cret-token"}}, map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// A state-changing request that a browser marks as cross-site is refused
// with the session cookie or without a token at all; the same request from
// the console's own pages goes through.
func TestCrossSitePostRefused(t *testing.T) {
	for _, token := range []string{"s3cret-token", ""} {
		t.Run("token="+token, func(t *testing.T) {
			f := newFixture(t, token)
			f.seed(t, "stripe:evt_1", dedupe.Completed, stripeRequest("evt_1"))
			f.seed(t, "stripe:evt_2", dedupe.Completed, stripeRequest("evt_2"))
			hdr := func(extra map[string]string) map[string]string {
				h := map[string]string{}
				if token != "" {
					h["Cookie"] = "webhookd_admin=" + sessionCookie(t, f)
				}
				for k, v := range extra {
					h[k] = v
				}
				return h
			}
			for _, attack := range []map[string]string{
				{"Sec-Fetch-Site": "cross-site"},
				{"Sec-Fetch-Site": "same-site"},
				{"Origin": "https://evil.example"},
			} {
				resp, _ := f.do(t, "POST", "/records/stripe:evt_1/delete", false, hdr(attack))
				require.Equal(t, http.StatusForbidden, resp.StatusCode, attack)
				resp, _ = f.do(t, "DELETE", "/api/records/stripe:evt_1", false, hdr(attack))
				require.Equal(t, http.StatusForbidden, resp.StatusCode, attack)
			}
			_, err := f.store.Get(context.Background(), "stripe:evt_1")
			require.NoError(t, err, "nothing was deleted")
			resp, _ := f.do(t, "POST", "/records/stripe:evt_2/delete", false, hdr(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": f.srv.URL}))
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			_, err = f.store.Get(context.Background(), "stripe:evt_2")
			require.ErrorIs(t, err, dedupe.ErrNotFound)
		})
	}
}

func sessionCookie(t *testing.T, f *fixture) string {
	t.Helper()
	resp, err := noRedirect.PostForm(f.srv.URL+"/signin", url.Values{"token": {f.token}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, resp.Cookies(), 1)
	return resp.Cookies()[0].Value
}

// Without a token, the listener answers requests to a loopback host only.
func TestNoTokenLoopbackHostOnly(t *testing.T) {
	f := newFixture(t, "")
	resp, _ := f.do(t, "GET", "/api/records", false, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	req, err := http.NewRequest("GET", f.srv.URL+"/api/records", nil)
	require.NoError(t, err)
	req.Host = "rebound.evil.example"
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusForbidden, r.StatusCode)
}

func TestListRecords(t *testing.T) {
	f := newFixture(t, "tok")
	f.seed(t, "stripe:evt_1", dedupe.Completed, stripeRequest("evt_1"))
	time.Sleep(2 * time.Millisecond)
	f.seed(t, "xendit:inv_1", dedupe.Failed, dedupe.NewRequest("application/json", "invoice.paid", []byte(`{}`), true))
	time.Sleep(2 * time.Millisecond)
	f.seed(t, "stripe:evt_2", dedupe.Failed, stripeRequest("evt_2"))
	time.Sleep(2 * time.Millisecond)
	f.seed(t, "stripe:evt_3", 0, stripeRequest("evt_3"))

	resp, body := f.do(t, "GET", "/api/records", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	keys, next := keysOf(t, body)
	require.Equal(t, []string{"stripe:evt_3", "stripe:evt_2", "xendit:inv_1", "stripe:evt_1"}, keys, "newest first")
	require.Empty(t, next)

	var a listAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	r := a.Records[1]
	require.Equal(t, "stripe", r["provider"])
	require.Equal(t, "evt_2", r["event_key"])
	require.Equal(t, "FAILED", r["state"])
	require.Equal(t, float64(422), r["status"])
	require.Equal(t, float64(1), r["attempts"])
	require.Equal(t, "charge.failed", r["type"])
	require.Equal(t, true, r["stored"])
	for _, field := range []string{"created_at", "updated_at"} {
		_, err := time.Parse(time.RFC3339, r[field].(string))
		require.NoError(t, err, field)
	}
	require.Equal(t, "IN_FLIGHT", a.Records[0]["state"])

	_, body = f.do(t, "GET", "/api/records?provider=stripe&state=FAILED", true, nil)
	keys, _ = keysOf(t, body)
	require.Equal(t, []string{"stripe:evt_2"}, keys)
	_, body = f.do(t, "GET", "/api/records?state=failed", true, nil)
	keys, _ = keysOf(t, body)
	require.Equal(t, []string{"stripe:evt_2", "xendit:inv_1"}, keys)

	var all []string
	after := ""
	for range 3 {
		_, body = f.do(t, "GET", "/api/records?limit=2&after="+url.QueryEscape(after), true, nil)
		keys, next = keysOf(t, body)
		all = append(all, keys...)
		if next == "" {
			break
		}
		after = next
	}
	require.Equal(t, []string{"stripe:evt_3", "stripe:evt_2", "xendit:inv_1", "stripe:evt_1"}, all, "pages with the cursor")

	for _, q := range []string{"state=DONE", "limit=0", "limit=x", "limit=100000", "after=%21%21", "provider=stripe:evt"} {
		resp, body = f.do(t, "GET", "/api/records?"+q, true, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q+": "+body)
	}
}

func TestGetRecord(t *testing.T) {
	f := newFixture(t, "tok")
	f.seed(t, "stripe:evt_1", dedupe.Failed, stripeRequest("evt_1"))
	f.seed(t, "stripe:bin", dedupe.Completed, dedupe.NewRequest("application/octet-stream", "", []byte{0xff, 0x00, 0x01}, true))
	f.seed(t, "stripe:a/b", dedupe.Completed, dedupe.NewRequest("application/json", "t", []byte(`{}`), false))

	resp, body := f.do(t, "GET", "/api/records/stripe:evt_1", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var rec struct {
		Key     string `json:"key"`
		State   string `json:"state"`
		Request struct {
			Body       *string           `json:"body"`
			BodyBase64 []byte            `json:"body_base64"`
			Headers    map[string]string `json:"headers"`
			Stored     bool              `json:"stored"`
			Size       int               `json:"size"`
		} `json:"request"`
		Response struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &rec))
	require.Equal(t, "stripe:evt_1", rec.Key)
	require.Equal(t, string(stripeRequest("evt_1").Body), *rec.Request.Body)
	require.Equal(t, map[string]string{
		"Content-Type": "application/json; charset=utf-8", "User-Agent": "webhookd", "Idempotency-Key": "stripe:evt_1",
		"Webhook-Source": "stripe", "Webhook-Provider": "stripe", "Webhook-Event-Id": "evt_1", "Webhook-Event-Type": "charge.failed",
	}, rec.Request.Headers)
	require.Equal(t, 422, rec.Response.Status)
	require.Equal(t, `{"error":"unknown customer"}`, rec.Response.Body)

	_, body = f.do(t, "GET", "/api/records/stripe:bin", true, nil)
	rec.Request.Body, rec.Request.BodyBase64 = nil, nil
	require.NoError(t, json.Unmarshal([]byte(body), &rec))
	require.Nil(t, rec.Request.Body)
	require.Equal(t, []byte{0xff, 0x00, 0x01}, rec.Request.BodyBase64, "a body that is not text is base64")

	resp, body = f.do(t, "GET", "/api/records/stripe:a%2Fb", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	rec.Request.Body, rec.Request.BodyBase64 = nil, nil
	require.NoError(t, json.Unmarshal([]byte(body), &rec))
	require.Equal(t, "stripe:a/b", rec.Key)
	require.False(t, rec.Request.Stored)
	require.Nil(t, rec.Request.Body)
	require.Equal(t, 2, rec.Request.Size)

	resp, _ = f.do(t, "GET", "/api/records/stripe:absent", true, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestDeleteRecord(t *testing.T) {
	f := newFixture(t, "tok")
	f.seed(t, "stripe:done", dedupe.Completed, stripeRequest("done"))
	f.seed(t, "stripe:running", 0, stripeRequest("running"))
	resp, _ := f.do(t, "DELETE", "/api/records/stripe:done", true, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	_, err := f.store.Get(context.Background(), "stripe:done")
	require.ErrorIs(t, err, dedupe.ErrNotFound)
	resp, _ = f.do(t, "DELETE", "/api/records/stripe:done", true, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = f.do(t, "DELETE", "/api/records/stripe:running", true, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "a live claim is not deleted")
}

func TestRedriveRecord(t *testing.T) {
	f := newFixture(t, "tok")
	f.seed(t, "stripe:evt_1", dedupe.Failed, stripeRequest("evt_1"))
	f.seed(t, "stripe:done", dedupe.Completed, stripeRequest("done"))
	f.seed(t, "stripe:running", 0, stripeRequest("running"))
	f.seed(t, "stripe:nobody", dedupe.Failed, dedupe.NewRequest("application/json", "t", []byte(`{}`), false))
	f.seed(t, "stripe:done-nobody", dedupe.Completed, dedupe.NewRequest("application/json", "t", []byte(`{}`), false))

	// The core is still down: 503, and the record keeps its answer.
	f.down.status.Store(http.StatusServiceUnavailable)
	resp, body := f.do(t, "POST", "/api/records/stripe:evt_1/redrive", true, nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	rec, err := f.store.Get(context.Background(), "stripe:evt_1")
	require.NoError(t, err)
	require.Equal(t, dedupe.Failed, rec.State)
	require.Equal(t, 422, rec.Response.Status)

	// Fixed: 200 with the record, COMPLETED with the new answer.
	f.down.status.Store(http.StatusOK)
	resp, body = f.do(t, "POST", "/api/records/stripe:evt_1/redrive", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, "COMPLETED", got["state"])
	require.Equal(t, float64(200), got["status"])
	require.Equal(t, float64(2), got["attempts"], "first delivery and this redrive; the one the core missed changed nothing")
	req, fwdBody := f.down.last()
	require.Equal(t, string(stripeRequest("evt_1").Body), fwdBody, "the body byte for byte")
	require.Equal(t, "stripe:evt_1", req.Header.Get("Idempotency-Key"))
	require.Equal(t, "application/json; charset=utf-8", req.Header.Get("Content-Type"))
	require.Equal(t, "charge.failed", req.Header.Get("Webhook-Event-Type"))
	require.Equal(t, "stripe", req.Header.Get("Webhook-Provider"))
	require.Equal(t, "evt_1", req.Header.Get("Webhook-Event-Id"))

	for _, tc := range []struct {
		key  string
		want int
	}{
		{"stripe:running", http.StatusConflict}, // IN_FLIGHT
		{"stripe:nobody", http.StatusUnprocessableEntity},
		{"stripe:done-nobody", http.StatusUnprocessableEntity}, // COMPLETED, but nothing to forward
		{"stripe:absent", http.StatusNotFound},
	} {
		resp, body := f.do(t, "POST", "/api/records/"+tc.key+"/redrive", true, nil)
		require.Equal(t, tc.want, resp.StatusCode, tc.key+": "+body)
	}

	// A COMPLETED record is forwarded again on the operator's word, with
	// the same Idempotency-Key (the core dedupes it): while the core is
	// down it stays COMPLETED with its answer, then 200 with one more
	// attempt.
	f.down.status.Store(http.StatusServiceUnavailable)
	resp, body = f.do(t, "POST", "/api/records/stripe:done/redrive", true, nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	rec, err = f.store.Get(context.Background(), "stripe:done")
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State, "a redrive the core missed leaves it delivered")
	require.Equal(t, 200, rec.Response.Status)
	require.Equal(t, uint32(1), rec.Attempts, "and unchanged")
	f.down.status.Store(http.StatusOK)
	for _, tc := range []struct {
		key      string
		attempts float64
	}{
		{"stripe:evt_1", 3}, // COMPLETED by the redrive above
		{"stripe:done", 2},  // delivered at first; the missed redrive is not counted
	} {
		resp, body := f.do(t, "POST", "/api/records/"+tc.key+"/redrive", true, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.key+": "+body)
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		require.Equal(t, "COMPLETED", got["state"], tc.key)
		require.Equal(t, tc.attempts, got["attempts"], tc.key)
		req, _ := f.down.last()
		require.Equal(t, tc.key, req.Header.Get("Idempotency-Key"))
	}

	// A rejection again is recorded: 200, FAILED with the new answer.
	f.seed(t, "stripe:evt_2", dedupe.Failed, stripeRequest("evt_2"))
	f.down.status.Store(http.StatusBadRequest)
	resp, body = f.do(t, "POST", "/api/records/stripe:evt_2/redrive", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, "FAILED", got["state"])
	require.Equal(t, float64(400), got["status"])
}

// The console's pages render the records, and its forms act on them.
func TestConsolePages(t *testing.T) {
	f := newFixture(t, "")
	f.seed(t, "stripe:evt_1", dedupe.Failed, stripeRequest("evt_1"))
	f.seed(t, "xendit:inv_1", dedupe.Completed, dedupe.NewRequest("application/json", "invoice.paid", []byte(`{"id":"inv_1"}`), true))
	resp, body := f.do(t, "GET", "/", false, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, body, `href="/records/stripe:evt_1"`)
	require.Contains(t, body, `<span class="state failed">FAILED</span>`, "a colour with a text label")
	_, body = f.do(t, "GET", "/?provider=xendit", false, nil)
	require.NotContains(t, body, "evt_1")
	require.Contains(t, body, "inv_1")

	_, body = f.do(t, "GET", "/records/stripe:evt_1", false, nil)
	require.Contains(t, body, "&#34;amount&#34;: 1200", "the body pretty-printed")
	require.Contains(t, body, `id="redrive"`)
	_, body = f.do(t, "GET", "/records/xendit:inv_1", false, nil)
	require.Contains(t, body, `id="redrive"`, "a delivered event may be redriven too")
	_, body = f.do(t, "GET", "/records/xendit:inv_1/confirm?action=redrive", false, nil)
	require.Contains(t, body, "again with the same Idempotency-Key")
	_, body = f.do(t, "GET", "/records/stripe:evt_1/confirm?action=redrive", false, nil)
	require.Contains(t, body, `action="/records/stripe:evt_1/redrive"`)

	resp, _ = f.do(t, "POST", "/records/stripe:evt_1/redrive", false, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/records/stripe:evt_1?done=delivered", resp.Header.Get("Location"))
	_, body = f.do(t, "GET", "/records/stripe:evt_1?done=delivered", false, nil)
	require.Contains(t, body, "Redriven: the core service accepted it.")
	require.Contains(t, body, `<span class="state big completed" id="record-state">COMPLETED</span>`)
}
