package lmdb

import (
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
