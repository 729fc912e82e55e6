package deliver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
)

// startsCore records when each attempt started and answers 200 at once.
type startsCore struct {
	mu         sync.Mutex
	starts     []time.Time
	open, most int
	done       chan struct{}
	want       int
	once       sync.Once
}

func (c *startsCore) Forward(ctx context.Context, req dispatch.Request) dispatch.Result {
	c.mu.Lock()
	c.starts = append(c.starts, time.Now())
	c.open++
	c.most = max(c.most, c.open)
	n := len(c.starts)
	c.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // the core's own time to answer
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
	if n == c.want {
		c.once.Do(func() { close(c.done) })
	}
	return dispatch.Result{Outcome: dispatch.Delivered, Status: 200}
}

// BenchmarkRate200 queues 1,000 events for a destination with rate 200 and
// concurrency 16, on the system clock, and reports the most attempts that
// started in any one-second window, the time from the first start to the
// last, and the most open at once (the target: at most 200 in any second, ±10 %):
//
//	go test ./deliver -run '^$' -bench Rate200 -benchtime 1x
func BenchmarkRate200(b *testing.B) {
	const events = 1000
	s, err := lmdb.Open(b.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range events {
		if _, err := s.Enqueue(ctx, dedupe.Enqueue{Key: fmt.Sprintf("stripe:evt_%d\x1fledger", i), Fingerprint: "fp", MaxAge: time.Hour,
			Request: dedupe.NewRequest("application/json", "", []byte("{}"), true)}); err != nil {
			b.Fatal(err)
		}
	}
	core := &startsCore{done: make(chan struct{}), want: events}
	loop, err := New(Options{Store: s}, []Destination{{Name: "ledger", Forwarder: core, Rate: 200, Concurrency: 16}})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() { defer close(finished); loop.Run(runCtx) }()
	<-core.done
	cancel()
	<-finished
	starts := core.starts
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	most := 0
	for i := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	b.ReportMetric(float64(most), "max-starts-in-1s")
	// 1,000 at 200 a second is five windows: the last starts 4 s after the first.
	b.ReportMetric(starts[len(starts)-1].Sub(starts[0]).Seconds(), "first-to-last-s")
	b.ReportMetric(float64(core.most), "max-open")
}

// BenchmarkDeliverySide measures the delivery side of a queue destination
// against a sync forward, in the same process on the same kind of store (a
// synced LMDB) to the same core (a loopback server answering 200 at once,
// its CPU counted too), 16 at a time each: mode=queue drains b.N queued
// events with the loop (Take, the forward, Settle; the enqueues before it
// are not counted), mode=sync makes b.N sync forwards as the receiver does
// (Claim, the forward, Complete). cpu-µs/event is the process's CPU per
// event; the modes alternate with -count, so that they are compared within
// one run:
//
//	go test ./deliver -run '^$' -bench DeliverySide -benchtime 3000x -count 5
func BenchmarkDeliverySide(b *testing.B) {
	for _, mode := range []string{"queue", "sync"} {
		b.Run("mode="+mode, func(b *testing.B) { benchDeliverySide(b, mode) })
	}
}

// deliveryBody is an event of about the size of a Stripe event.
var deliveryBody = []byte(`{"id":"evt_bench","type":"payment_intent.succeeded","data":{"object":{"pad":"` + strings.Repeat("x", 1900) + `"}}}`)

func benchDeliverySide(b *testing.B, mode string) {
	const concurrency = 16
	s, err := lmdb.Open(b.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var got atomic.Int64
	done := make(chan struct{})
	n := int64(b.N)
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"received":true}`))
		got.Add(1)
	}))
	defer core.Close()
	fwd, err := dispatch.New(dispatch.Options{URL: core.URL, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	key := func(i int) dedupe.Key {
		return dedupe.Key{Source: "stripe", Event: fmt.Sprintf("evt_%s_%d", mode, i), Destination: "ledger"}
	}
	request := func() *dedupe.Request {
		return dedupe.NewRequest("application/json", "payment_intent.succeeded", deliveryBody, true)
	}
	// each runs f for every event, concurrency at a time.
	each := func(f func(i int)) {
		next := make(chan int)
		var wg sync.WaitGroup
		for range concurrency {
			wg.Go(func() {
				for i := range next {
					f(i)
				}
			})
		}
		for i := range b.N {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	if mode == "queue" {
		each(func(i int) {
			if _, err := s.Enqueue(ctx, dedupe.Enqueue{Key: key(i).String(), Fingerprint: "fp", MaxAge: time.Hour, Request: request()}); err != nil {
				b.Error(err)
			}
		})
	}
	b.ResetTimer()
	cpu0, ok := processCPU()
	switch mode {
	case "queue":
		var settled atomic.Int64
		onAttempt := func(_, outcome string) {
			if outcome == OutcomeDelivered && settled.Add(1) == n {
				close(done)
			}
		}
		loop, err := New(Options{Store: s, OnAttempt: onAttempt}, []Destination{{Name: "ledger", Forwarder: fwd, Concurrency: concurrency}})
		if err != nil {
			b.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		finished := make(chan struct{})
		go func() { defer close(finished); loop.Run(runCtx) }()
		<-done
		cancel()
		<-finished
	case "sync":
		each(func(i int) {
			k := key(i)
			lease, _, err := s.Claim(ctx, k.String(), "fp", request())
			if err != nil {
				b.Error(err)
				return
			}
			res := fwd.Forward(ctx, dispatch.NewRequest(k, "stripe", "payment_intent.succeeded", "application/json", deliveryBody))
			if err := s.Complete(ctx, lease, dedupe.Response{Status: res.Status, ContentType: res.ContentType, Body: res.Body}); err != nil {
				b.Error(err)
			}
		})
	}
	cpu1, ok1 := processCPU()
	b.StopTimer()
	if ok && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/event")
	}
	if mode == "queue" {
		// Every event delivered and recorded, none twice.
		st, err := s.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st[dedupe.Completed] != b.N || got.Load() != n {
			b.Fatalf("%d completed, %d at the core, of %d", st[dedupe.Completed], got.Load(), b.N)
		}
	}
}
