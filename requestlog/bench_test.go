package requestlog_test

import (
	"bytes"
	"context"
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

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
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
// store commits per request (the writer's batches), the request log's own
// writes, bytes allocated per request, the growth of
// data.mdb's disk blocks, and the process's RSS afterwards. The unsigned
// flood runs first: its figures are not inflated by the signed run's.
//
// With WEBHOOKD_TEST_POSTGRES_DSN set, BenchmarkFloodPostgres runs the same
// on the Postgres store, in a schema of its own; its disk figure is the
// growth of the schema's tables and indexes (pg_total_relation_size).
func BenchmarkFlood(b *testing.B) {
	dir := b.TempDir()
	var commits atomic.Int64
	store, err := lmdb.Open(dir, lmdb.Options{Options: dedupe.Options{PruneInterval: -1},
		OnCommit: func(int, time.Duration) { commits.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	flood(b, store, &commits, func() int64 { return diskBytes(b, dir) })
}

func BenchmarkFloodPostgres(b *testing.B) {
	dsn := pgtest.DSN(b)
	schema := pgtest.Schema(b, dsn)
	var commits atomic.Int64
	store, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema,
		Options: dedupe.Options{PruneInterval: -1}, OnCommit: func(int, time.Duration) { commits.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	flood(b, store, &commits, func() int64 {
		var n int64
		if err := conn.QueryRow(context.Background(), `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	})
}

// floodStore is a store the flood runs on.
type floodStore interface {
	receiver.Store
	requestlog.Appender
}

// flood sends the three variants to a receiver on store; commits counts the
// store's write batches, disk reads what the store occupies.
func flood(b *testing.B, store floodStore, commits *atomic.Int64, disk func() int64) {
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer core.Close()
	fwd, err := dispatch.New(dispatch.Options{URL: core.URL, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer fwd.CloseIdleConnections()
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
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
			appends := &countingAppender{Appender: store}
			rlog.Store(nil)
			if logged {
				rlog.Store(requestlog.New(appends, requestlog.Options{OnDrop: func(n int) { dropped.Add(int64(n)) }}))
			}
			runtime.GC()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			disk0, c0 := disk(), commits.Load()
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
							d, err := ad.Sign(p)
							if err != nil {
								b.Error(err)
								return
							}
							req.Header.Set("Stripe-Signature", d.Header.Get("Stripe-Signature"))
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
			b.ReportMetric(float64(disk()-disk0)/1024, "disk-KiB")
			b.ReportMetric(rssMiB(b), "RSS-MiB")
			b.ReportMetric(float64(dropped.Load()), "log-dropped")
			b.ReportMetric(float64(appends.n.Load()), "log-writes")
		}
	}
	b.Run("unsigned-without-log", func(b *testing.B) { run(b, false, false) })
	b.Run("unsigned", func(b *testing.B) { run(b, false, true) })
	b.Run("signed", func(b *testing.B) { run(b, true, true) })
}

// countingAppender counts the request log's writes (on LMDB they are also
// among the commits; on Postgres they are transactions of their own).
type countingAppender struct {
	requestlog.Appender
	n atomic.Int64
}

func (c *countingAppender) AppendRequests(ctx context.Context, e []dedupe.LoggedRequest, b dedupe.RequestLogBounds) error {
	c.n.Add(1)
	return c.Appender.AppendRequests(ctx, e, b)
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
