package tiered

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

var _ dedupe.Store = (*Store)(nil)

func openTestPG(t testing.TB, dsn, schema string, opts dedupe.Options) *postgres.Store {
	t.Helper()
	opts.PruneInterval = -1
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Options: opts, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func openTestLMDB(t testing.TB, opts dedupe.Options) *lmdb.Store {
	t.Helper()
	opts.PruneInterval = -1
	s, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: opts, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// The behavioural table every backend passes; the tiered store needs
// Postgres, and skips without it (once, not once per case).
func TestConformance(t *testing.T) {
	dsn := pgtest.DSN(t)
	dedupetest.Run(t, func(t *testing.T, opts dedupe.Options) dedupe.Store {
		return New(openTestLMDB(t, opts), openTestPG(t, dsn, pgtest.Schema(t, dsn), opts))
	})
}
