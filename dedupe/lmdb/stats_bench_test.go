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
// webhookd_store_records costs: Stats walks every record. Compare the sizes
// side by side:
//
//	go test -run '^$' -bench Stats -benchtime 20x ./dedupe
func BenchmarkStats(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			fill(b, s, n)
			b.ResetTimer()
			for b.Loop() {
				counts, err := s.Stats(ctx)
				if err != nil || counts[dedupe.Completed] != n {
					b.Fatalf("stats: %v %v", counts, err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
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
