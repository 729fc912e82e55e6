package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

// BenchmarkReceive measures the whole receive path (verify, claim, forward
// over loopback, record, answer) on the durable LMDB store, for new events
// and for duplicates of a finished one, side by side:
//
//	go test ./receiver -run '^$' -bench Receive -count 5
//
// deliveries/s is the figure to compare; a duplicate never leaves the
// process (a read transaction answers it), a new event costs two synced
// writes and a round trip to the downstream.
func BenchmarkReceive(b *testing.B) {
	for _, kind := range []string{"new", "duplicate"} {
		for _, callers := range []int{1, 64} {
			b.Run(fmt.Sprintf("event=%s/callers=%d", kind, callers), func(b *testing.B) {
				benchReceive(b, kind == "duplicate", callers)
			})
		}
	}
}

func benchReceive(b *testing.B, duplicate bool, callers int) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer down.Close()
	store, err := lmdb.Open(b.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	var reg providers.Registry
	if err := reg.Register(ad); err != nil {
		b.Fatal(err)
	}
	fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	h, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	// Bodies and signatures are made before the clock starts: the figure is
	// webhookd's cost, not the benchmark's.
	n := b.N
	if duplicate {
		n = 1
	}
	bodies := make([][]byte, n)
	sigs := make([]string, n)
	signBody := signer(b)
	for i := range bodies {
		bodies[i] = event(fmt.Sprintf("evt_bench_%d", i), 1000+i)
		sigs[i] = signBody(bodies[i])
	}
	send := func(i int) int {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(bodies[i]))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Stripe-Signature", sigs[i])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if duplicate && send(0) != http.StatusOK {
		b.Fatal("first delivery not forwarded")
	}

	var next, failed atomic.Int64
	b.ReportAllocs()
	b.SetParallelism((callers + 1) / 2) // RunParallel starts GOMAXPROCS × this
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			if duplicate {
				i = 0
			}
			if send(i) != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d deliveries not answered 200", failed.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkDelivery measures what the receiver itself costs per delivery,
// allocations first: the request goes through the handler (routing,
// Stripe's signature check, parse, claim, forward, record, answer and the
// delivery log line) against an in-memory store and a forwarder that
// answers at once, so neither LMDB nor the loopback hides the receiver's
// share:
//
//	go test ./receiver -run '^$' -bench Delivery -benchmem -count 5
//
// event=unsigned is a delivery whose signature does not verify, answered
// 401 before the store is touched: what a flood of forged callbacks costs.
// cpu-ns/op is the process's CPU time per delivery (garbage collection
// included): on a shared machine it moves far less than ns/op, which counts
// the time spent waiting for a core.
//
// log=json writes the delivery line as production does with
// WEBHOOKD_LOG_FORMAT=json (to io.Discard); log=off runs the logger at
// WARN, where the line of a 2xx is disabled and must cost nothing.
func BenchmarkDelivery(b *testing.B) {
	for _, kind := range []string{"new", "duplicate", "unsigned"} {
		for _, log := range []string{"json", "off"} {
			b.Run(fmt.Sprintf("event=%s/log=%s", kind, log), func(b *testing.B) {
				level := slog.LevelInfo
				if log == "off" {
					level = slog.LevelWarn
				}
				logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: level}))
				benchDelivery(b, kind, logger)
			})
		}
	}
}

func benchDelivery(b *testing.B, kind string, logger *slog.Logger) {
	benchDeliveryWith(b, kind, logger, nil)
}

// benchDeliveryWith is benchDelivery with set applied to the receiver's
// Config (a nil set changes nothing).
func benchDeliveryWith(b *testing.B, kind string, logger *slog.Logger, set func(*receiver.Config)) {
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	var reg providers.Registry
	if err := reg.Register(ad); err != nil {
		b.Fatal(err)
	}
	cfg := receiver.Config{
		Providers: &reg, Store: newMemStore(), Forwarder: instantForwarder{}, MaxBodyBytes: 1 << 20, Logger: logger,
	}
	if set != nil {
		set(&cfg)
	}
	h, err := receiver.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	duplicate, want := kind != "new", http.StatusCreated
	n := b.N
	if duplicate {
		n = 1
	}
	bodies := make([][]byte, n)
	sigs := make([]string, n)
	signBody := signer(b)
	for i := range bodies {
		bodies[i] = event(fmt.Sprintf("evt_bench_%d", i), 1000+i)
		sigs[i] = signBody(bodies[i])
	}
	if kind == "unsigned" {
		sigs[0], want = "t=1,v1=00", http.StatusUnauthorized
	}
	// One request and writer, reset for each delivery, so that the figure
	// is the handler's allocations, not the test's.
	req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", nil)
	req.Header.Set("Content-Type", "application/json")
	var body bytes.Reader
	w := &benchWriter{header: http.Header{}}
	send := func(i int) {
		body.Reset(bodies[i])
		req.Body = io.NopCloser(&body)
		req.ContentLength = int64(len(bodies[i]))
		req.Header["Stripe-Signature"] = sigs[i : i+1]
		clear(w.header)
		w.status = 0
		w.body.Reset()
		h.ServeHTTP(w, req)
		if w.status != want {
			b.Fatalf("delivery %d answered %d: %s", i, w.status, w.body.String())
		}
	}
	if kind == "duplicate" {
		send(0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, ok := processCPU()
	for i := 0; i < b.N; i++ {
		if duplicate {
			send(0)
		} else {
			send(i)
		}
	}
	if cpu1, ok1 := processCPU(); ok && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// benchWriter is a ResponseWriter that a benchmark can reuse.
type benchWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// instantForwarder is a core service that takes every event at once.
type instantForwarder struct{}

func (instantForwarder) Forward(context.Context, dispatch.Request) dispatch.Result {
	return dispatch.Result{Outcome: dispatch.Delivered, Status: http.StatusCreated, Attempts: 1,
		ContentType: "application/json", Body: []byte(`{"received":true}`)}
}

// memStore is the smallest store with dedupe's semantics that a delivery
// needs: claim, complete, fail, release.
type memStore struct {
	mu    sync.Mutex
	token uint64
	recs  map[string]*dedupe.Record
}

func newMemStore() *memStore { return &memStore{recs: map[string]*dedupe.Record{}} }

func (s *memStore) Claim(_ context.Context, key, fp string, _ *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[key]; ok {
		switch {
		case r.Fingerprint != fp:
			return dedupe.Lease{}, nil, dedupe.ErrFingerprintMismatch
		case r.State == dedupe.InFlight:
			return dedupe.Lease{}, r, dedupe.ErrInFlight
		}
		return dedupe.Lease{}, r, nil
	}
	s.token++
	s.recs[key] = &dedupe.Record{Key: key, State: dedupe.InFlight, Token: s.token, Fingerprint: fp}
	return dedupe.Lease{Key: key, Token: s.token}, nil, nil
}

func (s *memStore) finish(l dedupe.Lease, st dedupe.State, resp dedupe.Response) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[l.Key]
	if !ok || r.Token != l.Token || r.State != dedupe.InFlight {
		return dedupe.ErrLeaseLost
	}
	r.State, r.Response = st, resp
	return nil
}

func (s *memStore) Complete(_ context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(l, dedupe.Completed, resp)
}

func (s *memStore) Fail(_ context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(l, dedupe.Failed, resp)
}

func (s *memStore) Release(_ context.Context, l dedupe.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[l.Key]; ok && r.Token == l.Token && r.State == dedupe.InFlight {
		delete(s.recs, l.Key)
	}
	return nil
}
