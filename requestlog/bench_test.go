package requestlog_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/stripe"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/requestlog"
)

// BenchmarkFlood measures what the request log costs a flood of unsigned
// requests, beside signed new events, in one run on one synced LMDB store
// (docs/console.md, "The request log"):
//
//	go test ./requestlog -run '^$' -bench Flood -benchtime 1x
//
// Each variant sends 3,000 requests (unsigned-without-log: the same
// flood with no request log, the baseline) from 16 clients to a real receiver
// whose OnDelivery feeds the request log, then reports requests a second,
// store commits per request, bytes allocated per request, the growth of
// data.mdb's disk blocks, and the process's RSS afterwards. The unsigned
// flood runs first: its figures are not inflated by the signed run's.
func BenchmarkFlood(b *testing.B) {
	dir := b.TempDir()
	var commits atomic.Int64
	store, err := lmdb.Open(dir, lmdb.Options{Options: dedupe.Options{PruneInterval: -1},
		OnCommit: func(int, time.Duration) { commits.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer core.Close()
	fwd, err := dispatch.New(dispatch.Options{URL: core.URL, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer fwd.CloseIdleConnections()
	ad, err := stripe.New([]string{secret}, 5*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	var reg providers.Registry
	if err := reg.Register(ad); err != nil {
		b.Fatal(err)
	}
	var dropped atomic.Int64
	// Each variant has a log of its own, closed (what waits written) before
	// the disk is read.
	var rlog atomic.Pointer[requestlog.Log]
	observe := func(d receiver.Delivery) { rlog.Load().Observe(d) }
	h, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 1 << 20, OnDelivery: observe})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	const requests, clients = 3000, 16
	body := func(i int, variant string) []byte {
		return fmt.Appendf(nil, `{"id":"evt_%s_%d_%d","object":"event","type":"charge.succeeded","data":{"object":{"amount":%d,"pad":%q}}}`,
			variant, b.N, i, i, strings.Repeat("x", 600))
	}
	run := func(b *testing.B, signed, logged bool) {
		variant := fmt.Sprintf("%t-%t", signed, logged)
		for range b.N {
			dropped.Store(0)
			rlog.Store(nil)
			if logged {
				rlog.Store(requestlog.New(store, requestlog.Options{OnDrop: func(n int) { dropped.Add(int64(n)) }}))
			}
			runtime.GC()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			disk0, c0 := diskBytes(b, dir), commits.Load()
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int(next.Add(1)); i <= requests; i = int(next.Add(1)) {
						p := body(i, variant)
						req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/stripe", bytes.NewReader(p))
						if signed {
							req.Header.Set("Stripe-Signature", stripe.SignatureHeader(secret, time.Now(), p))
						}
						resp, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			runtime.ReadMemStats(&ms1)
			if l := rlog.Load(); l != nil {
				l.Close()
			}
			b.ReportMetric(float64(requests)/elapsed.Seconds(), "req/s")
			b.ReportMetric(float64(commits.Load()-c0)/requests, "commits/req")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/requests, "B-alloc/req")
			b.ReportMetric(float64(diskBytes(b, dir)-disk0)/1024, "disk-KiB")
			b.ReportMetric(rssMiB(b), "RSS-MiB")
			b.ReportMetric(float64(dropped.Load()), "log-dropped")
		}
	}
	b.Run("unsigned-without-log", func(b *testing.B) { run(b, false, false) })
	b.Run("unsigned", func(b *testing.B) { run(b, false, true) })
	b.Run("signed", func(b *testing.B) { run(b, true, true) })
}

// diskBytes is the disk data.mdb occupies (its blocks, not its length).
func diskBytes(b *testing.B, dir string) int64 {
	fi, err := os.Stat(filepath.Join(dir, "data.mdb"))
	if err != nil {
		b.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// rssMiB is the process's resident set, from /proc (0 elsewhere).
func rssMiB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
