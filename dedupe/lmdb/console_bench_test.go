package lmdb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// stripeEvent is a typical Stripe event body (payment_intent.succeeded, as
// in fixtures/stripe), about 2 KB.
func stripeEvent(b testing.TB) []byte {
	body, err := os.ReadFile("../../fixtures/stripe/payment_intent_succeeded.json")
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// requestKinds are what a claim can keep: nothing (WEBHOOKD_STORE_REQUESTS
// before it existed), the headers and size only (false), the whole request
// (true, the default).
func requestKinds(b testing.TB) []struct {
	name string
	req  func(body []byte) *dedupe.Request
} {
	return []struct {
		name string
		req  func(body []byte) *dedupe.Request
	}{
		{"none", func([]byte) *dedupe.Request { return nil }},
		{"headers", func(body []byte) *dedupe.Request {
			return dedupe.NewRequest("application/json; charset=utf-8", "payment_intent.succeeded", body, false)
		}},
		{"body", func(body []byte) *dedupe.Request {
			return dedupe.NewRequest("application/json; charset=utf-8", "payment_intent.succeeded", body, true)
		}},
	}
}

// BenchmarkStoredRequests measures what keeping requests costs one
// delivery's store work (a durable claim of a new key and its completion,
// from 64 callers, group commit, synced) and the disk a record takes,
// for a typical Stripe event:
//
//	go test ./dedupe/lmdb -run '^$' -bench StoredRequests -benchtime 20000x
//
// bytes/record is every page of the environment's DBIs (records, expiry
// and creation-time indexes) divided by the records.
func BenchmarkStoredRequests(b *testing.B) {
	body := stripeEvent(b)
	for _, kind := range requestKinds(b) {
		b.Run("request="+kind.name, func(b *testing.B) {
			dir := b.TempDir()
			warnIfTmpfs(b, dir)
			s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			resp := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"received":true}`)}
			var n atomic.Int64
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					ev := bytes.Replace(body, []byte("evt_"), []byte("evt_"+strconv.FormatInt(i, 10)+"_"), 1)
					l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d", i), "9f86d081884c7d659a2feaa0c55ad015", kind.req(ev))
					if err != nil {
						b.Error(err)
						return
					}
					if err := s.Complete(ctx, l, resp); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
			b.ReportMetric(float64(s.usedBytes(b))/float64(b.N), "bytes/record")
		})
	}
}

// usedBytes is the size of every page the store's DBIs hold.
func (s *Store) usedBytes(b testing.TB) int64 {
	var total int64
	err := s.view(func(txn *mdb.Txn) error {
		for _, dbi := range []mdb.DBI{s.records, s.expiry, s.created, s.meta} {
			st, err := txn.Stat(dbi)
			if err != nil {
				return err
			}
			total += int64(st.PSize) * int64(st.BranchPages+st.LeafPages+st.OverflowPages)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}

var (
	recentOnce  sync.Once
	recentStore *Store
	recentErr   error
)

// recentRecords is the size of BenchmarkRecent's store:
// WEBHOOKD_BENCH_RECORDS, or a million.
func recentRecords() int {
	if n, err := strconv.Atoi(os.Getenv("WEBHOOKD_BENCH_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// openRecentStore builds, once per process, a store of recentRecords()
// finished records a millisecond apart, written straight through the
// writer's transactions 10,000 at a time (claiming a million keys one by
// one would take the benchmark's whole budget): 80% stripe and 20% xendit,
// 1% FAILED, each keeping a typical Stripe event's request.
func openRecentStore(b *testing.B) *Store {
	recentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "webhookd-bench-recent-")
		if err != nil {
			recentErr = err
			return
		}
		s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
		if err != nil {
			recentErr = err
			return
		}
		recentStore = s
		body := stripeEvent(b)
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		total := recentRecords()
		start := time.Now()
		for lo := 0; lo < total && recentErr == nil; lo += 10000 {
			recentErr = s.update(context.Background(), func(txn *mdb.Txn) error {
				for i := lo; i < min(lo+10000, total); i++ {
					at := t0.Add(time.Duration(i) * time.Millisecond)
					key := fmt.Sprintf("stripe:evt_%07d", i)
					if i%5 == 4 {
						key = fmt.Sprintf("xendit:invoice.paid:inv_%07d", i)
					}
					st, status := dedupe.Completed, 200
					if i%100 == 7 {
						st, status = dedupe.Failed, 422
					}
					rec := dedupe.Record{Key: key, State: st, Attempts: 1, CreatedAt: at, UpdatedAt: at,
						ExpiresAt: at.Add(168 * time.Hour), Fingerprint: "9f86d081884c7d659a2feaa0c55ad015",
						Response: dedupe.Response{Status: status, ContentType: "application/json", Body: []byte(`{"received":true}`)},
						Request:  dedupe.NewRequest("application/json; charset=utf-8", "payment_intent.succeeded", body, true)}
					if err := s.put(txn, &rec); err != nil {
						return err
					}
				}
				return nil
			})
		}
		fmt.Fprintf(os.Stderr, "BenchmarkRecent: built a store of %d records in %s (%d MiB of pages)\n",
			total, time.Since(start).Round(time.Second), s.usedBytes(b)>>20)
	})
	if recentErr != nil {
		b.Fatal(recentErr)
	}
	return recentStore
}

// BenchmarkRecent lists a page of 50 records, newest first, from a store of
// a million (WEBHOOKD_BENCH_RECORDS):
//
//	go test ./dedupe/lmdb -run '^$' -bench Recent -benchtime 2000x
//
// first: the console's front page; deep: a page reached through the
// cursor, half a million records down; xendit (a fifth of the records) and
// FAILED (1%): filtered pages, which pass over the index entries that do
// not match; IN_FLIGHT (none): the worst case, a walk of the whole index.
func BenchmarkRecent(b *testing.B) {
	s := openRecentStore(b)
	ctx := context.Background()
	total := recentRecords()
	mid := dedupe.Record{Key: fmt.Sprintf("stripe:evt_%07d", total/2),
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(total/2) * time.Millisecond)}
	cases := []struct {
		name string
		o    dedupe.RecentOptions
	}{
		{"first", dedupe.RecentOptions{Limit: 50}},
		{"deep", dedupe.RecentOptions{Limit: 50, Cursor: dedupe.EncodeCursor(&mid)}},
		{"provider=xendit", dedupe.RecentOptions{Limit: 50, Provider: "xendit"}},
		{"state=FAILED", dedupe.RecentOptions{Limit: 50, State: dedupe.Failed}},
		{"state=IN_FLIGHT", dedupe.RecentOptions{Limit: 50, State: dedupe.InFlight}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				recs, _, err := s.Recent(ctx, tc.o)
				if err != nil {
					b.Fatal(err)
				}
				if tc.o.State != dedupe.InFlight && len(recs) != 50 {
					b.Fatalf("%d records", len(recs))
				}
			}
		})
	}
}

// TestMain closes and removes BenchmarkRecent's store.
func TestMain(m *testing.M) {
	code := m.Run()
	if recentStore != nil {
		dir, _ := recentStore.env.Path()
		recentStore.Close()
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
