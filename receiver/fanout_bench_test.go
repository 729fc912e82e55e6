package receiver_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/receiver"
)

// BenchmarkFanOut measures the CPU an event costs when it goes to two sync
// destinations against one, in one run: the same receiver, store and core
// stand-ins, the two kinds interleaved in blocks so that the machine's
// noise falls on both alike (docs/routing.md; the target is at
// most 2.2x):
//
//	go test ./receiver -run '^$' -bench FanOut -count 5
//
// cpu-ns/event is the process's CPU per event of each kind, the core
// stand-ins' share included; x-one is two's over one's.
func BenchmarkFanOut(b *testing.B) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer down.Close()
	const file = `sources:
  - {name: one, provider: stripe, settings: {secrets: "${SECRET}"}}
  - {name: two, provider: stripe, settings: {secrets: "${SECRET}"}}
destinations:
  - {name: billing, url: "${URL}"}
  - {name: ledger, url: "${URL}"}
routes:
  - {source: one, to: [billing]}
  - {source: two, to: [billing, ledger]}
`
	c := loadRoutes(b, file, map[string]string{"SECRET": secret, "URL": down.URL})
	rt, err := receiver.NewRoutes(c, forwarders(b, c))
	if err != nil {
		b.Fatal(err)
	}
	store, err := lmdb.Open(b.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	h, err := receiver.New(receiver.Config{Routing: func() *receiver.Routes { return rt }, Store: store, MaxBodyBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	const block = 50
	n := (b.N + block - 1) / block * block
	type delivery struct {
		body []byte
		sig  string
	}
	signBody := signer(b)
	prepare := func(kind string) []delivery {
		out := make([]delivery, n)
		for i := range out {
			out[i].body = event(fmt.Sprintf("evt_%s_%d", kind, i), 1000+i)
			out[i].sig = signBody(out[i].body)
		}
		return out
	}
	kinds := map[string][]delivery{"one": prepare("one"), "two": prepare("two")}
	send := func(source string, d delivery) {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/"+source, bytes.NewReader(d.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Stripe-Signature", d.sig)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", source, rec.Code, rec.Body)
		}
	}
	cpu := map[string]time.Duration{}
	b.ReportAllocs()
	b.ResetTimer()
	for start := 0; start < n; start += block {
		for _, kind := range []string{"one", "two"} {
			c0, ok := processCPU()
			for i := start; i < start+block; i++ {
				send(kind, kinds[kind][i])
			}
			c1, _ := processCPU()
			if !ok {
				b.Skip("no process CPU time on this platform")
			}
			cpu[kind] += c1 - c0
		}
	}
	b.StopTimer()
	one, two := float64(cpu["one"])/float64(n), float64(cpu["two"])/float64(n)
	b.ReportMetric(one, "one-cpu-ns/event")
	b.ReportMetric(two, "two-cpu-ns/event")
	b.ReportMetric(two/one, "x-one")
}
