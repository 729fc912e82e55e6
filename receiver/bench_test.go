package receiver_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/stripe"
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
	ad, err := stripe.New([]string{secret}, 5*time.Minute)
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
	for i := range bodies {
		bodies[i] = event(fmt.Sprintf("evt_bench_%d", i), 1000+i)
		sigs[i] = sign(bodies[i])
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
