package tiered

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// A record deleted (or finished anew) in Postgres between a node's read of
// it and its local copy is not left behind in the copy, where it would be
// replayed.
func TestTieredKeepDropsACopyDeletedMeanwhile(t *testing.T) {
	dsn := pgtest.DSN(t)
	opts := dedupe.Options{Lease: time.Minute, Retention: time.Hour}
	shared := openTestPG(t, dsn, pgtest.Schema(t, dsn), opts)
	tiered := New(openTestLMDB(t, opts), shared)
	ctx := context.Background()
	finished := func(key string) dedupe.Record {
		l, _, err := shared.Claim(ctx, key, "fp", nil)
		require.NoError(t, err)
		require.NoError(t, shared.Complete(ctx, l, dedupe.Response{Status: 200}))
		rec, err := shared.Get(ctx, key)
		require.NoError(t, err)
		return rec
	}

	// Read, then deleted by `keys delete`, then copied.
	stale := finished("stripe:evt_deleted")
	require.NoError(t, shared.Delete(ctx, stale.Key))
	tiered.keep(ctx, stale)
	_, err := tiered.local.Get(ctx, stale.Key)
	require.ErrorIs(t, err, dedupe.ErrNotFound)

	// Read, then deleted and delivered again, then copied.
	stale = finished("stripe:evt_redone")
	require.NoError(t, shared.Delete(ctx, stale.Key))
	time.Sleep(time.Millisecond) // a later UpdatedAt
	finished(stale.Key)
	tiered.keep(ctx, stale)
	_, err = tiered.local.Get(ctx, stale.Key)
	require.ErrorIs(t, err, dedupe.ErrNotFound)

	// Unchanged: the copy stays.
	rec := finished("stripe:evt_kept")
	tiered.keep(ctx, rec)
	got, err := tiered.local.Get(ctx, rec.Key)
	require.NoError(t, err)
	require.Equal(t, rec.UpdatedAt, got.UpdatedAt)
}
