package dedupe

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkBackendClaimComplete measures one delivery's store work, a claim
// and a completion of a new key, from parallel callers, on each durable
// backend: go test ./dedupe -run '^$' -bench BackendClaimComplete
func BenchmarkBackendClaimComplete(b *testing.B) {
	open := map[string]func(b *testing.B) backend{
		"lmdb": func(b *testing.B) backend {
			s, err := Open(b.TempDir(), Options{PruneInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(b *testing.B) backend {
			dsn := testPostgresDSN(b)
			return openTestPG(b, dsn, testSchema(b, dsn), Options{})
		},
	}
	for _, name := range []string{"lmdb", "postgres"} {
		b.Run(name, func(b *testing.B) {
			s := open[name](b)
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Sprintf("stripe:evt_%d", n.Add(1))
					l, _, err := s.Claim(ctx, key, "fp")
					if err != nil {
						b.Error(err)
						return
					}
					if err := s.Complete(ctx, l, Response{Status: 200}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
