package lmdb

import (
	"context"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// BenchmarkAppendRequests measures one flush of the request log: a batch
// of 256 entries, as requestlog writes them once a second under load, in
// arrival order but for a few neighbours swapped (requests finish in a
// different order than they arrive), appended to a log already at its
// bound of 10,000, so that each append also trims as many of the oldest.
// Run:
//
//	go test ./dedupe/lmdb -run '^$' -bench AppendRequests -benchmem -count 5
//
// cpu_ns/entry is the process's CPU time per entry (getrusage: the
// encoding, the writer's puts and deletes and the commit's sync), ns/entry
// the wall time; pages is what the log's DBI occupies at the end.
func BenchmarkAppendRequests(b *testing.B) {
	const batch, size = 256, 10000
	dir := b.TempDir()
	warnIfTmpfs(b, dir)
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	bounds := dedupe.RequestLogBounds{Size: size, Age: 24 * time.Hour}
	at := time.Now().Add(-time.Hour)
	entries := make([]dedupe.LoggedRequest, batch)
	next := func() []dedupe.LoggedRequest {
		for i := range entries {
			at = at.Add(137 * time.Microsecond)
			entries[i] = dedupe.LoggedRequest{Time: at, Source: "stripe", Provider: "stripe", Outcome: "forwarded",
				Status: 200, Size: 1712, RemoteAddr: "10.1.2.3:54321", EventKey: "evt_1QxBenchEvent00000001", Type: "payment_intent.succeeded"}
		}
		for i := 3; i < len(entries); i += 7 {
			entries[i-1], entries[i] = entries[i], entries[i-1]
		}
		return entries
	}
	ctx := context.Background()
	for range size / batch {
		if err := s.AppendRequests(ctx, next(), bounds); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime(b)
	for b.Loop() {
		if err := s.AppendRequests(ctx, next(), bounds); err != nil {
			b.Fatal(err)
		}
	}
	cpu = cpuTime(b) - cpu
	b.StopTimer()
	n := float64(b.N * batch)
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu_ns/entry")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/entry")
	var pages uint64
	if err := s.env.View(func(txn *mdb.Txn) error {
		st, err := txn.Stat(s.requests)
		if err == nil {
			pages = uint64(st.BranchPages + st.LeafPages + st.OverflowPages)
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(pages), "pages")
}
