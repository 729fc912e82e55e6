package dedupe

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adminConn is a plain connection to the test schema, for checking the
// store's tables behind its back.
func adminConn(t *testing.T, dsn, schema string) *pgx.Conn {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `SET search_path = `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	return conn
}

// countedStates is SELECT state, count(*) ... GROUP BY state, the answer
// Stats must give.
func countedStates(t *testing.T, conn *pgx.Conn) map[State]int {
	rows, err := conn.Query(context.Background(), `SELECT state, count(*) FROM `+PostgresTable+` GROUP BY state`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[State]int{}
	for rows.Next() {
		var (
			st int16
			n  int64
		)
		require.NoError(t, rows.Scan(&st, &n))
		out[State(st)] = int(n)
	}
	require.NoError(t, rows.Err())
	return out
}

// Stats, kept by triggers, equals counting the table after every kind of
// transition, on the Postgres store and on tiered (which asks Postgres).
func TestPostgresStatsMatchesCount(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	ok := Response{Status: 200}
	for _, kind := range []string{"postgres", "tiered"} {
		t.Run(kind, func(t *testing.T) {
			schema := testSchema(t, dsn)
			clock := newFakeClock()
			opts := Options{Lease: time.Minute, Retention: time.Hour, AbandonAfter: time.Hour, Now: clock.Now}
			var s backend = openTestPG(t, dsn, schema, opts)
			if kind == "tiered" {
				s = NewTiered(openTestLMDB(t, opts), s.(*PGStore))
			}
			admin := adminConn(t, dsn, schema)
			leases := map[string]Lease{}
			claim := func(key string) {
				l, _, err := s.Claim(ctx, key, "fp")
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
					require.NoError(t, s.Fail(ctx, leases["stripe:evt_3"], Response{Status: 422}))
				}},
				{"a lost lease changes nothing", func(t *testing.T) {
					require.ErrorIs(t, s.Complete(ctx, leases["stripe:evt_0"], ok), ErrLeaseLost)
				}},
				{"release", func(t *testing.T) {
					require.NoError(t, s.Release(ctx, leases["stripe:evt_4"]))
				}},
				{"delete and force delete", func(t *testing.T) {
					require.NoError(t, s.Delete(ctx, "stripe:evt_0"))
					require.ErrorIs(t, s.Delete(ctx, "stripe:evt_5"), ErrInFlight)
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
				require.Equal(t, countedStates(t, admin), got, step.name)
			}
		})
	}
}

// Stats reads the counts table only: it answers while the records table is
// locked against reads (as a scan of it would wait), whatever its size.
func TestPostgresStatsReadsNoRecords(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	schema := testSchema(t, dsn)
	s, err := OpenPostgres(ctx, dsn, PostgresOptions{Schema: schema, OpTimeout: time.Second, Options: Options{PruneInterval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	l, _, err := s.Claim(ctx, "stripe:evt_locked", "fp")
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, Response{Status: 200}))

	admin := adminConn(t, dsn, schema)
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `LOCK TABLE `+PostgresTable+` IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	got, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[State]int{Completed: 1}, got)
}

// A records table from before the counts table (an upgrade) is counted
// once when the counts table is created, and kept from then on.
func TestPostgresCountsStartFromExistingRecords(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	schema := testSchema(t, dsn)
	s := openTestPG(t, dsn, schema, Options{})
	for i := range 5 {
		l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d", i), "fp")
		require.NoError(t, err)
		if i < 3 {
			require.NoError(t, s.Complete(ctx, l, Response{Status: 200}))
		}
	}
	require.NoError(t, s.Close())
	admin := adminConn(t, dsn, schema)
	for _, q := range []string{
		`DROP TABLE ` + PostgresCountsTable,
		`DROP FUNCTION ` + PostgresTable + `_count() CASCADE`,
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	_, err := admin.Exec(ctx, `INSERT INTO `+PostgresTable+` (key, state, created_at, updated_at, expires_at, fingerprint)
		VALUES ('stripe:evt_old', 3, now(), now(), now() + interval '1 hour', 'fp')`)
	require.NoError(t, err)

	s = openTestPG(t, dsn, schema, Options{})
	got, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[State]int{Completed: 3, InFlight: 2, Failed: 1}, got)
	l, _, err := s.Claim(ctx, "stripe:evt_new", "fp")
	require.NoError(t, err)
	require.NoError(t, s.Fail(ctx, l, Response{Status: 422}))
	got, err = s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, countedStates(t, admin), got)
	require.Equal(t, 2, got[Failed])
}

// Concurrent writers on two nodes keep the counts exact, and do not
// deadlock on the count rows they share.
func TestPostgresStatsMatchesCountUnderConcurrency(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	schema := testSchema(t, dsn)
	nodes := []*PGStore{openTestPG(t, dsn, schema, Options{}), openTestPG(t, dsn, schema, Options{})}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[w%2]
			for i := range 40 {
				l, rec, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d", i%20), "fp")
				if err != nil || rec != nil {
					continue // in flight on another worker, or replayed
				}
				switch i % 4 {
				case 0:
					assert.NoError(t, s.Release(ctx, l))
				case 1:
					assert.NoError(t, s.Fail(ctx, l, Response{Status: 422}))
				case 2:
					assert.NoError(t, s.Complete(ctx, l, Response{Status: 200}))
					assert.NoError(t, s.Delete(ctx, l.Key))
				default:
					assert.NoError(t, s.Complete(ctx, l, Response{Status: 200}))
				}
			}
		}()
	}
	wg.Wait()
	got, err := nodes[0].Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, countedStates(t, adminConn(t, dsn, schema)), got)
}
