package tiered

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// BenchmarkTiered measures a tiered node's finish (claim excluded) and its
// replay of a key it holds a copy of, against one Postgres:
// go test ./dedupe/tiered -run '^$' -bench 'Tiered$' -count 5
func BenchmarkTiered(b *testing.B) {
	dsn := pgtest.DSN(b)
	ctx := context.Background()
	opts := dedupe.Options{Lease: time.Minute, Retention: time.Hour}
	node := New(openTestLMDB(b, opts), openTestPG(b, dsn, pgtest.Schema(b, dsn), opts))
	body := make([]byte, 2<<10) // a typical downstream answer
	var n atomic.Int64          // keys are new on every run
	b.Run("finish", func(b *testing.B) {
		leases := make([]dedupe.Lease, b.N)
		for i := range leases {

			l, _, err := node.Claim(ctx, fmt.Sprintf("stripe:evt_f%d", n.Add(1)), "fp", nil)
			if err != nil {
				b.Fatal(err)
			}
			leases[i] = l
		}
		b.ResetTimer()
		for i := range b.N {
			if err := node.Complete(ctx, leases[i], dedupe.Response{Status: 200, Body: body}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		key := fmt.Sprintf("stripe:evt_r%d", n.Add(1))
		l, _, err := node.Claim(ctx, key, "fp", nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := node.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, rec, err := node.Claim(ctx, key, "fp", nil); err != nil || rec == nil {
				b.Fatal(rec, err)
			}
		}
	})
}
