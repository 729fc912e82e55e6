package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// Stats, kept by triggers, equals counting the table after every kind of
// transition (the tiered store runs the same steps: dedupe/tiered's
// TestTieredStatsMatchesCount).
func TestPostgresStatsMatchesCount(t *testing.T) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	clock := dedupetest.NewClock()
	opts := dedupe.Options{Lease: time.Minute, Retention: time.Hour, AbandonAfter: time.Hour, Now: clock.Now}
	pgtest.StatsMatchCount(t, openTestPG(t, dsn, schema, opts), clock, pgtest.AdminConn(t, dsn, schema), Table)
}

// Stats reads the counts table only: it answers while the records table is
// locked against reads (as a scan of it would wait), whatever its size.
func TestPostgresStatsReadsNoRecords(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	schema := testSchema(t, dsn)
	s, err := Open(ctx, dsn, Options{Schema: schema, OpTimeout: time.Second, Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	l, _, err := s.Claim(ctx, "stripe:evt_locked", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))

	admin := pgtest.AdminConn(t, dsn, schema)
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `LOCK TABLE `+Table+` IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	got, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 1}, got)
}

// A records table from before the counts table (an upgrade) is counted
// once when the counts table is created, and kept from then on.
func TestPostgresCountsStartFromExistingRecords(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	schema := testSchema(t, dsn)
	s := openTestPG(t, dsn, schema, dedupe.Options{})
	for i := range 5 {
		l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d", i), "fp", nil)
		require.NoError(t, err)
		if i < 3 {
			require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
		}
	}
	require.NoError(t, s.Close())
	admin := pgtest.AdminConn(t, dsn, schema)
	for _, q := range []string{
		`DROP TABLE ` + CountsTable,
		`DROP FUNCTION ` + Table + `_count() CASCADE`,
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	_, err := admin.Exec(ctx, `INSERT INTO `+Table+` (key, state, created_at, updated_at, expires_at, fingerprint)
		VALUES ('stripe:evt_old', 3, now(), now(), now() + interval '1 hour', 'fp')`)
	require.NoError(t, err)

	s = openTestPG(t, dsn, schema, dedupe.Options{})
	got, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 3, dedupe.InFlight: 2, dedupe.Failed: 1}, got)
	l, _, err := s.Claim(ctx, "stripe:evt_new", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 422}))
	got, err = s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, pgtest.CountStates(t, admin, Table), got)
	require.Equal(t, 2, got[dedupe.Failed])
}

// Concurrent writers on two nodes keep the counts exact, and do not
// deadlock on the count rows they share.
func TestPostgresStatsMatchesCountUnderConcurrency(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	schema := testSchema(t, dsn)
	nodes := []*Store{openTestPG(t, dsn, schema, dedupe.Options{}), openTestPG(t, dsn, schema, dedupe.Options{})}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[w%2]
			for i := range 40 {
				l, rec, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d", i%20), "fp", nil)
				if err != nil || rec != nil {
					continue // in flight on another worker, or replayed
				}
				switch i % 4 {
				case 0:
					assert.NoError(t, s.Release(ctx, l))
				case 1:
					assert.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 422}))
				case 2:
					assert.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
					assert.NoError(t, s.Delete(ctx, l.Key))
				default:
					assert.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
				}
			}
		}()
	}
	wg.Wait()
	got, err := nodes[0].Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, pgtest.CountStates(t, pgtest.AdminConn(t, dsn, schema), Table), got)
}

// BenchmarkPostgresStats measures Stats over a table of 20,000 records:
// go test ./dedupe/postgres -run '^$' -bench PostgresStats -count 5
func BenchmarkPostgresStats(b *testing.B) {
	dsn := testPostgresDSN(b)
	ctx := context.Background()
	s := openTestPG(b, dsn, testSchema(b, dsn), dedupe.Options{})
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+s.table+` (key, state, created_at, updated_at, expires_at, fingerprint)
		SELECT 'stripe:evt_' || i, 2 + i % 2, now(), now(), now() + interval '1 hour', 'fp' FROM generate_series(1, 20000) i`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Stats(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A schema whose counts are kept by row triggers (one counts write per
// row, as schemas made before the writer's batches were) is moved to the
// statement triggers on open, and counted afresh.
func TestPostgresRowCountTriggersAreReplaced(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	schema := testSchema(t, dsn)
	s := openTestPG(t, dsn, schema, dedupe.Options{})
	admin := pgtest.AdminConn(t, dsn, schema)
	for _, q := range rowCountTriggers(schema) {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	l, _, err := s.Claim(ctx, "stripe:evt_row", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	require.NoError(t, s.Close())

	s = openTestPG(t, dsn, schema, dedupe.Options{})
	var rowTriggers int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::regclass AND tgtype & 1 = 1`, Table).Scan(&rowTriggers))
	require.Zero(t, rowTriggers, "the row triggers were replaced")
	_, _, err = s.Claim(ctx, "stripe:evt_statement", "fp", nil)
	require.NoError(t, err)
	got, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 1, dedupe.InFlight: 1}, got)
}
