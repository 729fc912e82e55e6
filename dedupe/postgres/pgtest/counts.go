package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
)

// AdminConn is a plain connection to schema, for checking a store's tables
// behind its back; it is closed when the test ends.
func AdminConn(t testing.TB, dsn, schema string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `SET search_path = `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	return conn
}

// CountStates is SELECT state, count(*) FROM table GROUP BY state: the
// answer Stats must give.
func CountStates(t testing.TB, conn *pgx.Conn, table string) map[dedupe.State]int {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT state, count(*) FROM `+pgx.Identifier{table}.Sanitize()+` GROUP BY state`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[dedupe.State]int{}
	for rows.Next() {
		var (
			st int16
			n  int64
		)
		require.NoError(t, rows.Scan(&st, &n))
		out[dedupe.State(st)] = int(n)
	}
	require.NoError(t, rows.Err())
	return out
}

// StatsMatchCount takes s, a Postgres-backed store whose records are
// table in admin's schema and whose clock is clock, through every kind of
// transition (claims, completes, fails, a lost lease, release, delete and
// force delete, ping, takeover, claim after delete, prune), and checks
// after each that s.Stats equals counting the table (CountStates).
func StatsMatchCount(t *testing.T, s dedupe.Store, clock *dedupetest.Clock, admin *pgx.Conn, table string) {
	ctx := context.Background()
	ok := dedupe.Response{Status: 200}
	leases := map[string]dedupe.Lease{}
	claim := func(key string) {
		l, _, err := s.Claim(ctx, key, "fp", nil)
		require.NoError(t, err)
		leases[key] = l
	}
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"claims", func(t *testing.T) {
			for i := range 8 {
				claim(fmt.Sprintf("stripe:evt_%d", i))
			}
		}},
		{"completes", func(t *testing.T) {
			for i := range 3 {
				require.NoError(t, s.Complete(ctx, leases[fmt.Sprintf("stripe:evt_%d", i)], ok))
			}
		}},
		{"fails", func(t *testing.T) {
			require.NoError(t, s.Fail(ctx, leases["stripe:evt_3"], dedupe.Response{Status: 422}))
		}},
		{"a lost lease changes nothing", func(t *testing.T) {
			require.ErrorIs(t, s.Complete(ctx, leases["stripe:evt_0"], ok), dedupe.ErrLeaseLost)
		}},
		{"release", func(t *testing.T) {
			require.NoError(t, s.Release(ctx, leases["stripe:evt_4"]))
		}},
		{"delete and force delete", func(t *testing.T) {
			require.NoError(t, s.Delete(ctx, "stripe:evt_0"))
			require.ErrorIs(t, s.Delete(ctx, "stripe:evt_5"), dedupe.ErrInFlight)
			require.NoError(t, s.ForceDelete(ctx, "stripe:evt_5"))
		}},
		{"a ping leaves nothing", func(t *testing.T) {
			require.NoError(t, s.Ping(ctx))
		}},
		{"takeover after the lease", func(t *testing.T) {
			clock.Advance(time.Minute)
			claim("stripe:evt_6")
			require.NoError(t, s.Complete(ctx, leases["stripe:evt_6"], ok))
		}},
		{"claim after delete", func(t *testing.T) {
			claim("stripe:evt_0")
		}},
		{"prune", func(t *testing.T) {
			clock.Advance(time.Hour)
			n, err := s.Prune(ctx, 2)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			n, err = s.Prune(ctx, 100)
			require.NoError(t, err)
			require.NotZero(t, n)
		}},
		{"everything pruned", func(t *testing.T) {
			clock.Advance(2 * time.Hour)
			_, err := s.Prune(ctx, 100)
			require.NoError(t, err)
		}},
	}
	for _, step := range steps {
		step.run(t)
		got, err := s.Stats(ctx)
		require.NoError(t, err, step.name)
		require.Equal(t, CountStates(t, admin, table), got, step.name)
	}
}
