package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// TestPostgresLeaseRunsFromTheClaim: a claim that waits for a lock on the
// table gets a lease measured from when its statement ran, by the
// database's clock, not from when the node started the claim. Otherwise
// the wait is taken out of the forward's lease, and another node takes the
// key over while the first is still forwarding.
func TestPostgresLeaseRunsFromTheClaim(t *testing.T) {
	const (
		lease = 5 * time.Second
		hold  = 1500 * time.Millisecond
	)
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	s := openTestPG(t, dsn, schema, dedupe.Options{Lease: lease})
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close(context.Background()) })
	_, err = admin.Exec(ctx, `SET search_path = `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)

	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	// EXCLUSIVE lets the claim's read through and holds its insert.
	_, err = tx.Exec(ctx, `LOCK TABLE `+Table+` IN EXCLUSIVE MODE`)
	require.NoError(t, err)
	type claimed struct {
		l   dedupe.Lease
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		l, _, err := s.Claim(context.Background(), "stripe:evt_locked", "fp", nil)
		done <- claimed{l, err}
	}()
	time.Sleep(hold)
	var unlocked time.Time
	require.NoError(t, tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&unlocked))
	require.NoError(t, tx.Commit(ctx))

	c := <-done
	require.NoError(t, c.err)
	require.False(t, c.l.Until.Before(unlocked.Add(lease)),
		"lease until %s: it must run %s from the claim's statement (after %s), not from before the lock wait",
		c.l.Until.Format(time.RFC3339Nano), lease, unlocked.Format(time.RFC3339Nano))
	rec, err := s.Get(ctx, "stripe:evt_locked")
	require.NoError(t, err)
	require.Equal(t, c.l.Until, rec.LeaseUntil, "the lease the caller holds is the one stored")
}
