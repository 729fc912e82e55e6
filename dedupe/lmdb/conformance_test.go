package lmdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
)

var _ dedupe.Store = (*Store)(nil)

// The behavioural table every backend passes.
func TestConformance(t *testing.T) {
	dedupetest.Run(t, func(t *testing.T, opts dedupe.Options) dedupe.Store {
		opts.PruneInterval = -1
		s, err := Open(t.TempDir(), Options{Options: opts, NoSync: true})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkBackendClaimComplete measures one delivery's store work, a claim
// and a completion of a new key, from parallel callers, durably:
// go test ./dedupe/lmdb -run '^$' -bench BackendClaimComplete
func BenchmarkBackendClaimComplete(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	dedupetest.BenchClaimComplete(b, s, nil)
}

// BenchmarkReplay measures a provider retry of a finished event whose
// stored request is 1 KiB or 1 MiB: path=claim is the replay path;
// path=get reads the whole record, stored request included (what a replay
// would cost if it read the request it does not answer with):
// go test ./dedupe/lmdb -run '^$' -bench BenchmarkReplay -benchmem
func BenchmarkReplay(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, size := range []int{1 << 10, dedupe.MaxStoredRequest} {
		b.Run(fmt.Sprintf("body=%dKiB/path=get", size>>10), func(b *testing.B) {
			key := dedupetest.StoreFinished(b, s, size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Get(context.Background(), key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("body=%dKiB/path=claim", size>>10), func(b *testing.B) {
			dedupetest.BenchReplay(b, s, size)
		})
	}
}
