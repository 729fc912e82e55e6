package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// TestPostgresSettleOutlastsItsCaller: the receiver gives each store call
// WEBHOOKD_STORE_TIMEOUT, and the same figure is the store's OpTimeout, so
// a complete, fail or release held up (here by a row lock) past its
// caller's deadline must keep its own OpTimeout from when the caller gave
// up. Bounded from its start instead, it would run out with the caller,
// and the key would stay IN_FLIGHT until its lease passed, the provider's
// next delivery of an event the core service already has forwarded again.
func TestPostgresSettleOutlastsItsCaller(t *testing.T) {
	const (
		opTimeout = time.Second
		wait      = opTimeout / 2           // the caller's deadline
		hold      = opTimeout + opTimeout/4 // past the statement's start + OpTimeout, before the give-up + OpTimeout
	)
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	s, err := Open(ctx, dsn, Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, Schema: schema, OpTimeout: opTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close(context.Background()) })
	_, err = admin.Exec(ctx, `SET search_path = `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)

	for _, tt := range []struct {
		name   string
		settle func(ctx context.Context, l dedupe.Lease) error
		want   dedupe.State // 0: the record is gone
	}{
		{"complete", func(ctx context.Context, l dedupe.Lease) error {
			return s.Complete(ctx, l, dedupe.Response{Status: 200})
		}, dedupe.Completed},
		{"fail", func(ctx context.Context, l dedupe.Lease) error {
			return s.Fail(ctx, l, dedupe.Response{Status: 400})
		}, dedupe.Failed},
		{"release", func(ctx context.Context, l dedupe.Lease) error { return s.Release(ctx, l) }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := "stripe:evt_slow_settle_" + tt.name
			l, _, err := s.Claim(ctx, key, "fp", nil)
			require.NoError(t, err)
			tx, err := admin.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, `SELECT 1 FROM `+Table+` WHERE key = $1 FOR UPDATE`, key)
			require.NoError(t, err)

			start := time.Now()
			callCtx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			err = tt.settle(callCtx, l)
			require.ErrorIs(t, err, context.DeadlineExceeded, "the caller stops waiting at its deadline")
			require.Less(t, time.Since(start), opTimeout, "the caller returns when its ctx ends, not when the statement does")

			time.Sleep(hold - time.Since(start))
			require.NoError(t, tx.Commit(ctx))
			require.Eventually(t, func() bool {
				rec, err := s.Get(ctx, key)
				if tt.want == 0 {
					return errors.Is(err, dedupe.ErrNotFound)
				}
				return err == nil && rec.State == tt.want
			}, 2*time.Second, 10*time.Millisecond)
		})
	}
}
