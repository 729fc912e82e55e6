package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

const secret = "whsec_test_secret"

// clock is the store's settable clock, so leases can pass in a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// downstream is the core service stand-in: it records what it receives and
// answers with handle (201 {"received":true} by default).
type downstream struct {
	*httptest.Server
	calls  atomic.Int32
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
	handle http.HandlerFunc
}

func newDownstream(t *testing.T) *downstream {
	d := &downstream{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d.calls.Add(1)
		d.mu.Lock()
		d.got = append(d.got, r)
		d.bodies = append(d.bodies, body)
		h := d.handle
		d.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"received":true}`))
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *downstream) setHandler(h http.HandlerFunc) {
	d.mu.Lock()
	d.handle = h
	d.mu.Unlock()
}

type harness struct {
	t      *testing.T
	dir    string
	clock  *clock
	store  *lmdb.Store
	down   *downstream
	srv    *httptest.Server
	policy receiver.FailedPolicy
	fwdTO  time.Duration
	// extra adapters are registered next to Stripe's.
	extra []providers.Provider
	// config, if set, adjusts the receiver's Config before New.
	config func(*receiver.Config)
}

func newHarness(t *testing.T, mut ...func(*harness)) *harness {
	h := &harness{t: t, dir: t.TempDir(), clock: &clock{t: time.Now()}, policy: receiver.PolicyReplay, fwdTO: 2 * time.Second}
	for _, m := range mut {
		m(h)
	}
	h.down = newDownstream(t)
	h.start()
	return h
}

// start opens the store and serves a receiver on it; stop closes both, as a
// process exit would.
func (h *harness) start() {
	t := h.t
	store, err := lmdb.Open(h.dir, lmdb.Options{Options: dedupe.Options{Lease: time.Minute, Now: h.clock.Now, PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	h.store = store
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(ad))
	for _, p := range h.extra {
		require.NoError(t, reg.Register(p))
	}
	fwd, err := dispatch.New(dispatch.Options{URL: h.down.URL, Timeout: h.fwdTO, Retries: 1,
		RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 20 * time.Millisecond})
	require.NoError(t, err)
	cfg := receiver.Config{
		Providers: &reg, Store: store, Forwarder: fwd, Ready: store.Ping,
		MaxBodyBytes: 4096, FailedPolicy: h.policy, Now: h.clock.Now,
	}
	if h.config != nil {
		h.config(&cfg)
	}
	handler, err := receiver.New(cfg)
	require.NoError(t, err)
	h.srv = httptest.NewServer(handler)
	t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.srv != nil {
		h.srv.Close()
		h.srv = nil
	}
	if h.store != nil {
		h.store.Close()
		h.store = nil
	}
}

func event(id string, amount int) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"payment_intent.succeeded","created":1700000000,"pending_webhooks":1,"data":{"object":{"id":"pi_1","amount":%d}}}`, id, amount))
}

type reply struct {
	status int
	header http.Header
	body   string
}

// post sends body to /webhooks/provider with the given Stripe-Signature
// (sign for a valid one).
func (h *harness) post(provider string, body []byte, sig string) reply {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+provider, bytes.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func sign(t testing.TB, body []byte) string { return stripeSignature(t, secret, time.Now(), body) }

// signer is sign for many bodies (a benchmark's): the signing provider is
// built once.
func signer(t testing.TB) func(body []byte) string {
	p, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	return func(body []byte) string {
		d, err := p.Sign(body)
		require.NoError(t, err)
		return d.Header.Get("Stripe-Signature")
	}
}

func (h *harness) deliver(body []byte) reply { return h.post("stripe", body, sign(h.t, body)) }

func (h *harness) records() []dedupe.Record {
	recs, err := h.store.List(context.Background(), dedupe.ListOptions{})
	require.NoError(h.t, err)
	return recs
}

func (h *harness) state(key string) dedupe.State {
	rec, err := h.store.Get(context.Background(), key)
	if err != nil {
		return 0
	}
	return rec.State
}

// TestStatusTable walks docs/contract.md's table, row by row, in its order.
func TestStatusTable(t *testing.T) {
	t.Run("unknown provider is 404, store untouched", func(t *testing.T) {
		h := newHarness(t)
		body := event("evt_404", 1)
		for _, p := range []string{"paypal", "midtrans", "xendit"} {
			r := h.post(p, body, sign(t, body))
			require.Equal(t, http.StatusNotFound, r.status, p)
		}
		require.Empty(t, h.records())
		require.Zero(t, h.down.calls.Load())
	})
	t.Run("body over the limit is 413, store untouched", func(t *testing.T) {
		h := newHarness(t)
		body := []byte(`{"id":"evt_big","pad":"` + strings.Repeat("x", 5000) + `"}`)
		require.Equal(t, http.StatusRequestEntityTooLarge, h.deliver(body).status)
		// Without a Content-Length the limit still holds.
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/stripe", io.MultiReader(bytes.NewReader(body)))
		req.ContentLength = -1
		req.Header.Set("Stripe-Signature", sign(t, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		require.Empty(t, h.records())
	})
	t.Run("missing, wrong or stale signature is 401, store untouched", func(t *testing.T) {
		h := newHarness(t)
		body := event("evt_401", 1)
		cases := map[string]string{
			"missing":      "",
			"wrong secret": stripeSignature(t, "whsec_other", time.Now(), body),
			"stale":        stripeSignature(t, secret, time.Now().Add(-6*time.Minute), body),
			"other body":   sign(t, event("evt_401", 2)),
			"malformed":    "t=abc,v1=zz",
			"oversized":    "t=1," + strings.Repeat("v1=00,", 3000),
			"v0 only":      strings.Replace(sign(t, body), "v1=", "v0=", 1),
		}
		for name, sig := range cases {
			r := h.post("stripe", body, sig)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
			require.NotContains(t, r.body, secret, name)
		}
		require.Empty(t, h.records())
		require.Zero(t, h.down.calls.Load())
	})
	t.Run("verified but not JSON or no event key is 400, store untouched", func(t *testing.T) {
		h := newHarness(t)
		for _, body := range []string{`not json`, `[1,2]`, `{"object":"event"}`, `{"id":""}`, `{"id":"evt_\u0000x"}`, `{"id":"` + strings.Repeat("e", 600) + `"}`, ``} {
			r := h.deliver([]byte(body))
			require.Equal(t, http.StatusBadRequest, r.status, body)
		}
		require.Empty(t, h.records())
		require.Zero(t, h.down.calls.Load())
	})
	t.Run("a numeric id is a key as written", func(t *testing.T) {
		// docs/provider-specs.md ({{json.a.b}}): Stripe's ids are
		// strings, but a spec reads a number as its text.
		h := newHarness(t)
		r := h.deliver([]byte(`{"id":42}`))
		require.Equal(t, http.StatusCreated, r.status)
		require.Equal(t, dedupe.Completed, h.state("stripe:42"))
	})
	t.Run("same key, different fingerprint is 422, store unchanged", func(t *testing.T) {
		h := newHarness(t)
		require.Equal(t, http.StatusCreated, h.deliver(event("evt_422", 100)).status)
		before := h.records()
		r := h.deliver(event("evt_422", 999))
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, before, h.records())
		require.EqualValues(t, 1, h.down.calls.Load())
		// A legitimate retry (pending_webhooks changed, re-signed) is no mismatch.
		retry := bytes.Replace(event("evt_422", 100), []byte(`"pending_webhooks":1`), []byte(`"pending_webhooks":3`), 1)
		require.Equal(t, http.StatusCreated, h.deliver(retry).status)
	})
	t.Run("COMPLETED or FAILED replays the stored answer without calling downstream", func(t *testing.T) {
		h := newHarness(t)
		first := h.deliver(event("evt_done", 1))
		require.Equal(t, http.StatusCreated, first.status)
		require.Empty(t, first.header.Get("Idempotent-Replayed"))
		for i := 0; i < 3; i++ {
			r := h.deliver(event("evt_done", 1))
			require.Equal(t, http.StatusCreated, r.status)
			require.Equal(t, `{"received":true}`, r.body)
			require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
			require.Equal(t, "application/json", r.header.Get("Content-Type"))
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		require.Equal(t, dedupe.Completed, h.state("stripe:evt_done"))
	})
	t.Run("IN_FLIGHT under lease is 409 with Retry-After", func(t *testing.T) {
		h := newHarness(t)
		release := make(chan struct{})
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) { <-release; w.WriteHeader(200) })
		done := make(chan reply)
		go func() { done <- h.deliver(event("evt_busy", 1)) }()
		require.Eventually(t, func() bool { return h.down.calls.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
		r := h.deliver(event("evt_busy", 1))
		require.Equal(t, http.StatusConflict, r.status)
		require.Equal(t, "60", r.header.Get("Retry-After"))
		require.Equal(t, dedupe.InFlight, h.state("stripe:evt_busy"))
		close(release)
		require.Equal(t, http.StatusOK, (<-done).status)
		require.EqualValues(t, 1, h.down.calls.Load())
	})
	t.Run("new key forwarded, 2xx answered and COMPLETED", func(t *testing.T) {
		h := newHarness(t)
		body := event("evt_new", 1)
		r := h.deliver(body)
		require.Equal(t, http.StatusCreated, r.status)
		require.Equal(t, `{"received":true}`, r.body)
		rec, err := h.store.Get(context.Background(), "stripe:evt_new")
		require.NoError(t, err)
		require.Equal(t, dedupe.Completed, rec.State)
		require.Equal(t, 201, rec.Response.Status)
		// What the core service received.
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0])
		require.Equal(t, "application/json; charset=utf-8", got.Header.Get("Content-Type"))
		require.Equal(t, "stripe:evt_new", got.Header.Get("Idempotency-Key"))
		require.Equal(t, "stripe", got.Header.Get("Webhook-Provider"))
		require.Equal(t, "stripe", got.Header.Get("Webhook-Source"), "a source made from the environment is named after its provider")
		require.Equal(t, "evt_new", got.Header.Get("Webhook-Event-Id"))
		require.Equal(t, "payment_intent.succeeded", got.Header.Get("Webhook-Event-Type"))
		require.Empty(t, got.Header.Get("Stripe-Signature"))
	})
	t.Run("permanent 4xx: FAILED and replayed under policy replay", func(t *testing.T) {
		h := newHarness(t)
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte("unknown order"))
		})
		for i := 0; i < 3; i++ {
			r := h.deliver(event("evt_rejected", 1))
			require.Equal(t, http.StatusUnprocessableEntity, r.status)
			require.Equal(t, "unknown order", r.body)
			require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true")
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		require.Equal(t, dedupe.Failed, h.state("stripe:evt_rejected"))
	})
	t.Run("permanent 4xx: released under policy retry", func(t *testing.T) {
		h := newHarness(t, func(h *harness) { h.policy = receiver.PolicyRetry })
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) })
		for i := 0; i < 2; i++ {
			require.Equal(t, http.StatusBadRequest, h.deliver(event("evt_retry", 1)).status)
		}
		require.EqualValues(t, 2, h.down.calls.Load())
		require.Empty(t, h.records())
	})
	t.Run("downstream unavailable: 503 with Retry-After, key released", func(t *testing.T) {
		h := newHarness(t)
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		r := h.deliver(event("evt_down", 1))
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.NotEmpty(t, r.header.Get("Retry-After"))
		require.EqualValues(t, 2, h.down.calls.Load(), "first attempt and one retry")
		require.Empty(t, h.records())
		// The provider's next retry is forwarded afresh.
		h.down.setHandler(nil)
		require.Equal(t, http.StatusCreated, h.deliver(event("evt_down", 1)).status)
		require.Equal(t, dedupe.Completed, h.state("stripe:evt_down"))
	})
}

func TestStormReachesDownstreamOnce(t *testing.T) {
	h := newHarness(t)
	h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond) // keep the first forward in flight
		w.WriteHeader(http.StatusOK)
	})
	body := event("evt_storm", 1)
	var wg sync.WaitGroup
	statuses := make(chan int, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/stripe", bytes.NewReader(body))
			req.Header.Set("Stripe-Signature", sign(t, body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	require.EqualValues(t, 1, h.down.calls.Load())
	require.Equal(t, 50, counts[200]+counts[409], "%v", counts)
	require.GreaterOrEqual(t, counts[200], 1)
}

func TestRestartReplaysWithoutDownstream(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, http.StatusCreated, h.deliver(event("evt_restart", 1)).status)
	h.stop()
	h.start()
	r := h.deliver(event("evt_restart", 1))
	require.Equal(t, http.StatusCreated, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.EqualValues(t, 1, h.down.calls.Load())
}

func TestCrashedClaimIsReclaimedAfterLease(t *testing.T) {
	h := newHarness(t)
	// A process claims the event and dies before finishing.
	_, _, err := h.store.Claim(context.Background(), "stripe:evt_crash", fingerprint(t, event("evt_crash", 1)), nil)
	require.NoError(t, err)
	h.stop()
	h.start()

	r := h.deliver(event("evt_crash", 1))
	require.Equal(t, http.StatusConflict, r.status)
	require.Zero(t, h.down.calls.Load())

	h.clock.Advance(61 * time.Second)
	r = h.deliver(event("evt_crash", 1))
	require.Equal(t, http.StatusCreated, r.status)
	require.EqualValues(t, 1, h.down.calls.Load())
	rec, err := h.store.Get(context.Background(), "stripe:evt_crash")
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
	require.Equal(t, uint32(2), rec.Attempts)
}

func fingerprint(t *testing.T, body []byte) string {
	ad, err := spec.NewBuiltin("stripe", []string{secret}, map[string]string{"TOLERANCE": "1m"}, nil)
	require.NoError(t, err)
	ev, err := providertest.OneEvent(ad.Parse(providers.Delivery{Body: body}))
	require.NoError(t, err)
	return ev.Fingerprint
}

func TestDownstreamHangsOrResets(t *testing.T) {
	t.Run("hang", func(t *testing.T) {
		h := newHarness(t, func(h *harness) { h.fwdTO = 300 * time.Millisecond })
		unblock := make(chan struct{})
		defer close(unblock)
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-unblock:
			case <-r.Context().Done():
			}
		})
		start := time.Now()
		r := h.deliver(event("evt_hang", 1))
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.Less(t, time.Since(start), 3*time.Second)
		require.Empty(t, h.records(), "the key is released for the provider's retry")
	})
	t.Run("reset", func(t *testing.T) {
		h := newHarness(t)
		h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		})
		r := h.deliver(event("evt_reset", 1))
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.Empty(t, h.records())
	})
}

func TestHealthAndReady(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(h.srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	h.store.Close()
	resp, err := http.Get(h.srv.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	resp, err = http.Get(h.srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// A store that cannot write answers deliveries 503.
	require.Equal(t, http.StatusServiceUnavailable, h.deliver(event("evt_closed", 1)).status)
}

// stripeSignature is the Stripe-Signature header of body signed with
// secret at time at, as the built-in stripe spec signs it.
func stripeSignature(t testing.TB, secret string, at time.Time, body []byte) string {
	t.Helper()
	h, err := spec.SignBuiltin("stripe", secret, at, body)
	require.NoError(t, err)
	return h.Get("Stripe-Signature")
}
