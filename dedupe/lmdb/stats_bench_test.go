package lmdb

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// BenchmarkStats measures what one Prometheus scrape of
// webhookd_store_records costs: Stats reads the counts every write keeps
// (op=counts), against walking every record (op=scan, the walk Open and
// Check make). Compare the sizes side by side:
//
//	go test ./dedupe/lmdb -run '^$' -bench Stats -count 5
func BenchmarkStats(b *testing.B) {
	scan := func(s *Store) (map[dedupe.State]int, error) {
		var c stateCounts
		err := s.view(func(txn *mdb.Txn) (err error) {
			c, err = scanCounts(ctx, txn, s.records)
			return err
		})
		return c.stats(), err
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		s, err := Open(b.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		fill(b, s, n)
		for _, op := range []struct {
			name  string
			stats func(*Store) (map[dedupe.State]int, error)
		}{{"scan", scan}, {"counts", (*Store).statsCtx}} {
			b.Run(fmt.Sprintf("records=%d/op=%s", n, op.name), func(b *testing.B) {
				for b.Loop() {
					counts, err := op.stats(s)
					if err != nil || counts[dedupe.Completed] != n {
						b.Fatalf("stats: %v %v", counts, err)
					}
				}
				if op.name == "scan" {
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
				}
			})
		}
		s.Close()
	}
}

// fill writes n COMPLETED records with a typical small stored answer, in
// transactions of 10k.
func fill(b *testing.B, s *Store, n int) {
	b.Helper()
	now := time.Now()
	body := bytes.Repeat([]byte("x"), 64)
	for done := 0; done < n; {
		batch := min(10_000, n-done)
		err := s.write(ctx, func(txn *mdb.Txn) error {
			for i := range batch {
				rec := dedupe.Record{
					Key: fmt.Sprintf("stripe:evt_%012d", done+i), State: dedupe.Completed, Attempts: 1,
					CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour), Fingerprint: "0123456789abcdef0123456789abcdef",
					Response: dedupe.Response{Status: 200, ContentType: "application/json", Body: body},
				}
				if err := s.put(txn, &rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		done += batch
	}
}

func (s *Store) statsCtx() (map[dedupe.State]int, error) { return s.Stats(ctx) }
