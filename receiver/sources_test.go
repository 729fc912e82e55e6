package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/routing"
)

const (
	euSecret = "whsec_eu_account_secret"
	usSecret = "whsec_us_account_secret"
)

// routesFile has two Stripe accounts and two core services: euro
// invoices of the EU account go to billing and ledger, every other event
// of either account to billing.
const routesFile = `sources:
  - {name: stripe-eu, provider: stripe, settings: {secrets: "${EU_SECRET}"}}
  - {name: stripe-us, provider: stripe, settings: {secrets: "${US_SECRET}"}}
destinations:
  - {name: billing, url: "${BILLING_URL}", retries: 0}
  - {name: ledger, url: "${LEDGER_URL}", retries: 0, headers: {Authorization: "Bearer ${LEDGER_TOKEN}"}}
routes:
  - source: stripe-eu
    types: ["invoice.*"]
    where: {data.object.currency: eur}
    to: [billing, ledger]
  - source: "*"
    types: ["invoice.*", "payment_intent.*"]
    to: [billing]
`

type routed struct {
	t         *testing.T
	store     *lmdb.Store
	srv       *httptest.Server
	down      map[string]*downstream
	mu        sync.Mutex
	delivered []receiver.Delivery
}

// builtinEntry is the built-in spec provider named name.
func builtinEntry(t testing.TB, name string) providers.Entry {
	t.Helper()
	specs, err := spec.Builtin()
	require.NoError(t, err)
	for _, s := range specs {
		if s.Entry().Name == name {
			return s.Entry()
		}
	}
	t.Fatalf("no built-in spec %q", name)
	return providers.Entry{}
}

func loadRoutes(t testing.TB, file string, env map[string]string) *routing.Config {
	t.Helper()
	c, err := routing.Parse("routes.yaml", []byte(file), 0o600, routing.Options{
		Table:     []providers.Entry{builtinEntry(t, "stripe"), midtrans.Entry()},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Env:       providers.Env{Lease: time.Minute, DispatchTimeout: 2 * time.Second},
		Defaults:  routing.DestinationDefaults{Timeout: 2 * time.Second, Retries: 1, FailedPolicy: "replay"},
	})
	require.NoError(t, err)
	return c
}

// forwarders makes each destination's dispatch.Forwarder, as serve does.
func forwarders(t testing.TB, c *routing.Config) map[string]receiver.Forwarder {
	t.Helper()
	out := map[string]receiver.Forwarder{}
	for _, d := range c.Destinations {
		f, err := dispatch.New(dispatch.Options{URL: d.URL, Timeout: d.Timeout, Retries: d.Retries, Headers: d.Headers,
			RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
		require.NoError(t, err)
		out[d.Name] = f
	}
	return out
}

func newRouted(t *testing.T, file string) *routed {
	h := &routed{t: t, down: map[string]*downstream{"billing": newDownstream(t), "ledger": newDownstream(t)}}
	env := map[string]string{"EU_SECRET": euSecret, "US_SECRET": usSecret, "BILLING_URL": h.down["billing"].URL,
		"LEDGER_URL": h.down["ledger"].URL, "LEDGER_TOKEN": "ledger-token"}
	c := loadRoutes(t, file, env)
	rt, err := receiver.NewRoutes(c, forwarders(t, c))
	require.NoError(t, err)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	h.store = store
	handler, err := receiver.New(receiver.Config{
		Routing: func() *receiver.Routes { return rt }, Store: store, MaxBodyBytes: 1 << 16,
		OnDelivery: func(d receiver.Delivery) { h.mu.Lock(); h.delivered = append(h.delivered, d); h.mu.Unlock() },
	})
	require.NoError(t, err)
	h.srv = httptest.NewServer(handler)
	t.Cleanup(h.srv.Close)
	return h
}

func invoice(id, currency string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","data":{"object":{"id":"in_1","currency":%q}}}`, id, currency))
}

func (h *routed) post(source, secret string, body []byte) reply {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+source, bytes.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", stripeSignature(h.t, secret, time.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func (h *routed) keys() []string {
	recs, err := h.store.List(context.Background(), dedupe.ListOptions{})
	require.NoError(h.t, err)
	var out []string
	for _, r := range recs {
		out = append(out, r.Key+" "+r.State.String())
	}
	return out
}

// TestSourcesNeverAcceptEachOther: two accounts of one gateway, each with
// its own secret: a delivery signed for one is 401 at the other's route
// and claims nothing; the same event id from both is two events.
func TestSourcesNeverAcceptEachOther(t *testing.T) {
	h := newRouted(t, routesFile)
	body := invoice("evt_1", "usd")
	r := h.post("stripe-us", euSecret, body)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Empty(t, h.keys(), "a delivery signed for stripe-eu claims nothing at stripe-us")
	require.Zero(t, h.down["billing"].calls.Load())

	require.Equal(t, http.StatusCreated, h.post("stripe-eu", euSecret, body).status, "one destination: the core's answer")
	require.Equal(t, http.StatusCreated, h.post("stripe-us", usSecret, body).status, "the other account's event of the same id is new")
	require.Equal(t, []string{"stripe-eu:evt_1\x1fbilling COMPLETED", "stripe-us:evt_1\x1fbilling COMPLETED"}, h.keys())
	require.Equal(t, http.StatusNotFound, h.post("stripe", euSecret, body).status, "with a file, only its sources are routes")

	got := h.down["billing"].got
	require.Len(t, got, 2)
	for i, src := range []string{"stripe-eu", "stripe-us"} {
		require.Equal(t, src, got[i].Header.Get("Webhook-Source"))
		require.Equal(t, "stripe", got[i].Header.Get("Webhook-Provider"))
		require.Equal(t, src+":evt_1", got[i].Header.Get("Idempotency-Key"))
	}
}

// TestFanOut: an event for two destinations is a record for each, both get
// the same Idempotency-Key, and the gateway its acknowledgement once both
// have it; a retry while one is down reaches only that one.
func TestFanOut(t *testing.T) {
	h := newRouted(t, routesFile)
	ledger, billing := h.down["ledger"], h.down["billing"]
	ledger.setHandler(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	body := invoice("evt_fan", "eur")

	r := h.post("stripe-eu", euSecret, body)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "ledger is down: the gateway keeps the event")
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Equal(t, []string{"stripe-eu:evt_fan\x1fbilling COMPLETED"}, h.keys(), "billing has it; ledger's claim is released")
	require.EqualValues(t, 1, billing.calls.Load())

	ledger.setHandler(nil)
	r = h.post("stripe-eu", euSecret, body)
	require.Equal(t, http.StatusOK, r.status, "every destination has it now: the acknowledgement")
	require.Equal(t, "{\"received\":true}\n", r.body)
	require.Empty(t, r.header.Get("Idempotent-Replayed"), "ledger's forward was new")
	require.EqualValues(t, 1, billing.calls.Load(), "the retry reached only the destination that lacked the event")
	require.EqualValues(t, 2, ledger.calls.Load())
	require.Equal(t, []string{"stripe-eu:evt_fan\x1fbilling COMPLETED", "stripe-eu:evt_fan\x1fledger COMPLETED"}, h.keys())
	require.Equal(t, billing.got[0].Header.Get("Idempotency-Key"), ledger.got[1].Header.Get("Idempotency-Key"))
	require.Equal(t, "stripe-eu:evt_fan", ledger.got[1].Header.Get("Idempotency-Key"))
	require.Equal(t, "Bearer ledger-token", ledger.got[1].Header.Get("Authorization"), "the destination's own header")
	require.Empty(t, billing.got[0].Header.Get("Authorization"), "only to its destination")

	r = h.post("stripe-eu", euSecret, body)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.EqualValues(t, 1, billing.calls.Load())
	require.EqualValues(t, 2, ledger.calls.Load())

	h.mu.Lock()
	defer h.mu.Unlock()
	last := h.delivered[len(h.delivered)-3:]
	require.ElementsMatch(t, []string{"billing", "ledger"}, []string{last[0].Destination, last[1].Destination},
		"a line per destination (forwarded at once, in either order)")
	require.Equal(t, "stripe-eu", last[2].Source)
	require.Equal(t, receiver.OutcomeBatch, last[2].Outcome, "the request's own line")
}

// TestUnrouted: an event no route wants is acknowledged, forwarded
// nowhere, stores nothing and is counted unrouted.
func TestUnrouted(t *testing.T) {
	h := newRouted(t, routesFile)
	body := []byte(`{"id":"evt_cust","object":"event","type":"customer.created","data":{"object":{}}}`)
	r := h.post("stripe-us", usSecret, body)
	require.Equal(t, http.StatusOK, r.status)
	require.Empty(t, h.keys())
	require.Zero(t, h.down["billing"].calls.Load()+h.down["ledger"].calls.Load())
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.delivered, 1)
	require.Equal(t, receiver.OutcomeUnrouted, h.delivered[0].Outcome)
	require.Equal(t, "stripe-us", h.delivered[0].Source)
	require.Equal(t, "stripe-us:evt_cust", h.delivered[0].Key)
}

// TestReloadLeavesDeliveriesInFlight: a delivery reads the routes once,
// when it starts; one in flight when they change finishes under its own.
func TestReloadLeavesDeliveriesInFlight(t *testing.T) {
	billing, ledger := newDownstream(t), newDownstream(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	billing.setHandler(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.WriteHeader(http.StatusCreated)
	})
	env := map[string]string{"EU_SECRET": euSecret, "US_SECRET": usSecret, "BILLING_URL": billing.URL, "LEDGER_URL": ledger.URL, "LEDGER_TOKEN": "t"}
	load := func(file string) *receiver.Routes {
		c := loadRoutes(t, file, env)
		rt, err := receiver.NewRoutes(c, forwarders(t, c))
		require.NoError(t, err)
		return rt
	}
	var current atomic.Pointer[receiver.Routes]
	current.Store(load(routesFile))
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	handler, err := receiver.New(receiver.Config{Routing: current.Load, Store: store, MaxBodyBytes: 1 << 16})
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	h := &routed{t: t, srv: srv, store: store}

	done := make(chan reply)
	go func() { done <- h.post("stripe-us", usSecret, invoice("evt_inflight", "usd")) }()
	<-arrived
	current.Store(load(strings.Replace(routesFile, "    to: [billing]\n", "    to: [ledger]\n", 1)))
	close(release)
	r := <-done
	require.Equal(t, http.StatusCreated, r.status, "finished under the routes it started with")
	require.Equal(t, []string{"stripe-us:evt_inflight\x1fbilling COMPLETED"}, h.keys())

	r = h.post("stripe-us", usSecret, invoice("evt_after", "usd"))
	require.Equal(t, http.StatusCreated, r.status)
	require.EqualValues(t, 1, ledger.calls.Load(), "a delivery that starts after the reload takes the new routes")
}

// TestFanOutForwardsAtOnce: an event's destinations are forwarded at
// once, so the gateway waits for the slowest, not for their sum: each core
// stand-in here answers only once the other has the event too.
func TestFanOutForwardsAtOnce(t *testing.T) {
	h := newRouted(t, routesFile)
	var both sync.WaitGroup
	both.Add(2)
	for _, d := range h.down {
		d.setHandler(func(w http.ResponseWriter, r *http.Request) {
			both.Done()
			both.Wait()
			w.WriteHeader(http.StatusOK)
		})
	}
	r := h.post("stripe-eu", euSecret, invoice("evt_at_once", "eur"))
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, []string{"stripe-eu:evt_at_once\x1fbilling COMPLETED", "stripe-eu:evt_at_once\x1fledger COMPLETED"}, h.keys())
}

// TestMovingToAFileKeepsTheKeys: a source named after its provider, to a
// destination named default, has the keys of the environment's
// configuration: what was finished before the move is replayed after it.
func TestMovingToAFileKeepsTheKeys(t *testing.T) {
	h := newHarness(t)
	body := event("evt_moved", 1)
	require.Equal(t, http.StatusCreated, h.deliver(body).status)
	require.Equal(t, dedupe.Completed, h.state("stripe:evt_moved"))

	file := `sources: [{name: stripe, provider: stripe, settings: {secrets: "${SECRET}"}}]
destinations: [{name: default, url: "${URL}"}]
routes: [{to: [default]}]
`
	c := loadRoutes(t, file, map[string]string{"SECRET": secret, "URL": h.down.URL})
	rt, err := receiver.NewRoutes(c, forwarders(t, c))
	require.NoError(t, err)
	handler, err := receiver.New(receiver.Config{Routing: func() *receiver.Routes { return rt }, Store: h.store, MaxBodyBytes: 4096})
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	moved := &routed{t: t, srv: srv}
	r := moved.post("stripe", secret, body)
	require.Equal(t, http.StatusCreated, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"), "replayed from the record of before")
	require.EqualValues(t, 1, h.down.calls.Load())
}
