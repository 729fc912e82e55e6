package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/deliver"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/receiver"
)

// queueFile sends stripe-eu's invoices to ledger, a queue destination, and
// to billing, a sync one.
const queueFile = `sources:
  - {name: stripe-eu, provider: stripe, settings: {secrets: "${EU_SECRET}"}}
destinations:
  - {name: billing, url: "${BILLING_URL}", retries: 0}
  - {name: ledger, url: "${LEDGER_URL}", delivery: queue, max_age: 1h, timeout: 2s}
routes:
  - {source: stripe-eu, types: ["invoice.*"], to: [ledger]}
  - {source: stripe-eu, types: ["payment_intent.*"], to: [billing]}
`

type queued struct {
	t      *testing.T
	store  *lmdb.Store
	srv    *httptest.Server
	ledger chan *http.Request // what the queue destination's core received
	paused map[string]bool
	woken  chan string
	loop   *deliver.Loop
	// attempts receives each settled attempt's outcome.
	attempts chan string
}

func newQueued(t *testing.T) *queued {
	h := &queued{t: t, ledger: make(chan *http.Request, 10), paused: map[string]bool{}, woken: make(chan string, 10),
		attempts: make(chan string, 10)}
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ledger <- r
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(core.Close)
	billing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	t.Cleanup(billing.Close)
	c := loadRoutes(t, queueFile, map[string]string{"EU_SECRET": euSecret, "LEDGER_URL": core.URL, "BILLING_URL": billing.URL})
	fwd := forwarders(t, c)
	rt, err := receiver.NewRoutes(c, fwd)
	require.NoError(t, err)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	h.store = store
	ledger, _ := c.Destination("ledger")
	h.loop, err = deliver.New(deliver.Options{Store: store, Provider: c.ProviderOf,
		OnAttempt: func(_, outcome string) { h.attempts <- outcome }},
		[]deliver.Destination{{Name: "ledger", Forwarder: fwd["ledger"].(*dispatch.Forwarder), MaxAge: ledger.MaxAge, Concurrency: ledger.Concurrency}})
	require.NoError(t, err)
	handler, err := receiver.New(receiver.Config{
		Routing: func() *receiver.Routes { return rt }, Store: store, Queue: store, MaxBodyBytes: 1 << 16,
		Wake:   func(d string) { h.woken <- d; h.loop.Wake(d) },
		Paused: func(d string) bool { return h.paused[d] },
	})
	require.NoError(t, err)
	h.srv = httptest.NewServer(handler)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *queued) post(body []byte) reply {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/stripe-eu", bytes.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", stripeSignature(h.t, euSecret, time.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// TestQueueDestinationAcknowledgesOnceStored: the gateway is acknowledged
// once the event is QUEUED, before the core has it; the loop delivers it
// once, with the sync forward's headers; the gateway's retries are
// acknowledged again and queue nothing.
func TestQueueDestinationAcknowledgesOnceStored(t *testing.T) {
	h := newQueued(t)
	ctx := context.Background()
	body := invoice("evt_q", "eur")
	key := dedupe.Key{Source: "stripe-eu", Event: "evt_q", Destination: "ledger"}.String()

	r := h.post(body)
	require.Equal(t, http.StatusOK, r.status, "acknowledged once stored")
	require.Equal(t, "{\"received\":true}\n", r.body)
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.Equal(t, "ledger", <-h.woken)
	rec, err := h.store.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, dedupe.Queued, rec.State)
	require.Equal(t, body, rec.Request.Body)
	require.Empty(t, h.ledger, "nothing reached the core on the gateway's time")

	r = h.post(body)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"), "a retry of a queued event queues nothing new")

	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); h.loop.Run(loopCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	got := <-h.ledger
	require.Equal(t, "stripe-eu:evt_q", got.Header.Get("Idempotency-Key"))
	require.Equal(t, "stripe-eu", got.Header.Get("Webhook-Source"))
	require.Equal(t, "stripe", got.Header.Get("Webhook-Provider"))
	require.Equal(t, "invoice.paid", got.Header.Get("Webhook-Event-Type"))
	b, _ := io.ReadAll(got.Body)
	require.Equal(t, body, b, "byte for byte")

	require.Equal(t, deliver.OutcomeDelivered, <-h.attempts)
	rec, err = h.store.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
	require.Equal(t, http.StatusAccepted, rec.Response.Status)
	r = h.post(body)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Empty(t, h.ledger, "delivered once")
}

func TestPausedSyncDestinationAnswers503(t *testing.T) {
	h := newQueued(t)
	h.paused["billing"] = true
	body := []byte(`{"id":"evt_p","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}}`)
	r := h.post(body)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	_, err := h.store.Get(context.Background(), dedupe.Key{Source: "stripe-eu", Event: "evt_p", Destination: "billing"}.String())
	require.ErrorIs(t, err, dedupe.ErrNotFound, "nothing claimed: the gateway keeps the event")
	delete(h.paused, "billing")
	require.Equal(t, http.StatusCreated, h.post(body).status)
}

// A queue destination's paused flag does not stop the acknowledgement:
// the event is queued, and waits.
func TestPausedQueueDestinationStillQueues(t *testing.T) {
	h := newQueued(t)
	h.paused["ledger"] = true
	r := h.post(invoice("evt_pq", "eur"))
	require.Equal(t, http.StatusOK, r.status)
	st, err := h.store.QueueStats(context.Background(), "ledger")
	require.NoError(t, err)
	require.Equal(t, 1, st.Depth)
}

// failingQueue is a store that cannot write (a full disk, Postgres down).
type failingQueue struct{}

func (failingQueue) Enqueue(context.Context, dedupe.Enqueue) (*dedupe.Record, error) {
	return nil, fmt.Errorf("%w: no space left on device", dedupe.ErrUnavailable)
}

// Nothing is acknowledged that is not durable: a queue destination whose
// store cannot write answers 503 with Retry-After, and the gateway keeps
// the event.
func TestQueueDestinationOnAnUnwritableStoreAnswers503(t *testing.T) {
	c := loadRoutes(t, queueFile, map[string]string{"EU_SECRET": euSecret, "LEDGER_URL": "http://127.0.0.1:1", "BILLING_URL": "http://127.0.0.1:1"})
	rt, err := receiver.NewRoutes(c, forwarders(t, c))
	require.NoError(t, err)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	handler, err := receiver.New(receiver.Config{Routing: func() *receiver.Routes { return rt }, Store: store, Queue: failingQueue{}, MaxBodyBytes: 1 << 16})
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	h := &queued{t: t, srv: srv}
	r := h.post(invoice("evt_full", "eur"))
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Contains(t, r.body, "store unavailable")
	require.NotContains(t, r.body, "no space", "storage detail goes to the log only")
}
