package dedupe

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkTiered measures a tiered node's finish (claim excluded) and its
// replay of a key it holds a copy of, against one Postgres:
// go test ./dedupe -run '^$' -bench 'Tiered$' -count 5
func BenchmarkTiered(b *testing.B) {
	dsn := testPostgresDSN(b)
	ctx := context.Background()
	opts := Options{Lease: time.Minute, Retention: time.Hour}
	node := NewTiered(openTestLMDB(b, opts), openTestPG(b, dsn, testSchema(b, dsn), opts))
	body := make([]byte, 2<<10) // a typical downstream answer
	var n atomic.Int64          // keys are new on every run
	b.Run("finish", func(b *testing.B) {
		leases := make([]Lease, b.N)
		for i := range leases {

			l, _, err := node.Claim(ctx, fmt.Sprintf("stripe:evt_f%d", n.Add(1)), "fp")
			if err != nil {
				b.Fatal(err)
			}
			leases[i] = l
		}
		b.ResetTimer()
		for i := range b.N {
			if err := node.Complete(ctx, leases[i], Response{Status: 200, Body: body}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		key := fmt.Sprintf("stripe:evt_r%d", n.Add(1))
		l, _, err := node.Claim(ctx, key, "fp")
		if err != nil {
			b.Fatal(err)
		}
		if err := node.Complete(ctx, l, Response{Status: 200, Body: body}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, rec, err := node.Claim(ctx, key, "fp"); err != nil || rec == nil {
				b.Fatal(rec, err)
			}
		}
	})
}

// BenchmarkPostgresStats measures Stats over a table of 20,000 records:
// go test ./dedupe -run '^$' -bench PostgresStats -count 5
func BenchmarkPostgresStats(b *testing.B) {
	dsn := testPostgresDSN(b)
	ctx := context.Background()
	s := openTestPG(b, dsn, testSchema(b, dsn), Options{})
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+s.table+` (key, state, created_at, updated_at, expires_at, fingerprint)
		SELECT 'stripe:evt_' || i, 2 + i % 2, now(), now(), now() + interval '1 hour', 'fp' FROM generate_series(1, 20000) i`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Stats(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
