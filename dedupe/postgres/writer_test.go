package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// holdWriter opens a one-writer store on a new schema and parks its writer:
// a completion waits for a row lock the returned transaction holds, so that
// the ops sent meanwhile pile up into the writer's next batch. Committing
// the transaction lets the writer go. ddl runs on the new schema first
// (DDL on the table while the writer is parked would deadlock with it).
func holdWriter(t *testing.T, ddl ...string) (*Store, *pgx.Conn, pgx.Tx) {
	t.Helper()
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	s, err := Open(ctx, dsn, Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, Schema: schema, Writers: 1})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	admin := pgtest.AdminConn(t, dsn, schema)
	for _, q := range ddl {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	l, _, err := s.Claim(ctx, "stripe:evt_parked", "fp", nil)
	require.NoError(t, err)
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM `+Table+` WHERE key = $1 FOR UPDATE`, l.Key)
	require.NoError(t, err)
	go func() { _ = s.Complete(context.Background(), l, dedupe.Response{Status: 200}) }()
	require.Eventually(t, func() bool { return s.commits.Load() == 2 }, 5*time.Second, time.Millisecond,
		"the completion's batch is under way")
	return s, admin, tx
}

// One op whose statement fails does not fail the ops batched with it: the
// batch is rolled back and each op runs again alone, so that only the
// poisoned claim hears the error.
func TestPostgresWriterIsolatesAFailingOp(t *testing.T) {
	s, _, tx := holdWriter(t, `CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $f$
		BEGIN
			IF NEW.key = 'stripe:evt_poison' THEN RAISE EXCEPTION 'poisoned'; END IF;
			RETURN NEW;
		END $f$`,
		`CREATE TRIGGER poison BEFORE INSERT ON `+Table+` FOR EACH ROW EXECUTE FUNCTION poison()`)

	keys := []string{"stripe:evt_a", "stripe:evt_poison", "stripe:evt_b", "stripe:evt_c"}
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = s.Claim(ctx, key, "fp", nil)
		}()
	}
	require.Eventually(t, func() bool { return len(s.ops) == len(keys) }, 5*time.Second, time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()

	for i, key := range keys {
		if key == "stripe:evt_poison" {
			require.ErrorIs(t, errs[i], dedupe.ErrUnavailable, key)
			continue
		}
		require.NoError(t, errs[i], key)
		rec, err := s.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, dedupe.InFlight, rec.State)
	}
	require.EqualValues(t, 1, s.redone.Load(), "the four claims shared one batch, rolled back once")
}

// A claim whose caller gave up while its batch was held up is deleted again
// once the batch commits it: nobody holds its lease, and the provider's next
// delivery must be forwarded, not answered "in flight" until the lease
// passes.
func TestPostgresWriterDeletesAClaimNobodyWaitsFor(t *testing.T) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	s, err := Open(ctx, dsn, Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, Schema: schema, Writers: 1})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	admin := pgtest.AdminConn(t, dsn, schema)
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	// EXCLUSIVE holds the claim's batch before it writes anything.
	_, err = tx.Exec(ctx, `LOCK TABLE `+Table+` IN EXCLUSIVE MODE`)
	require.NoError(t, err)

	const key = "stripe:evt_gone"
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Claim(callCtx, key, "fp", nil)
		done <- err
	}()
	require.Eventually(t, func() bool { return s.commits.Load() == 1 }, 5*time.Second, time.Millisecond,
		"the claim's batch is under way")
	cancel()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	require.ErrorIs(t, <-done, context.Canceled)
	// Deleted by the caller on its way out, or by the writer once the
	// batch has committed it: a new claim then wins, long before the
	// minute's lease would have passed.
	require.Eventually(t, func() bool {
		_, rec, err := s.Claim(ctx, key, "fp", nil)
		return err == nil && rec == nil
	}, 5*time.Second, 10*time.Millisecond, "the claim nobody waits for was deleted")
}

// Two ops on one key never share a batch: the second waits for the next, so
// that it sees the first's row.
func TestPostgresWriterTakesAKeyOncePerBatch(t *testing.T) {
	s, _, tx := holdWriter(t)
	const key = "stripe:evt_twice"
	type answer struct {
		l   dedupe.Lease
		rec *dedupe.Record
		err error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			l, rec, err := s.Claim(ctx, key, "fp", nil)
			answers <- answer{l, rec, err}
		}()
	}
	require.Eventually(t, func() bool { return len(s.ops) == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	var leases, inFlight int
	for range 2 {
		a := <-answers
		switch {
		case a.err == nil && a.rec == nil:
			leases++
		case errors.Is(a.err, dedupe.ErrInFlight):
			inFlight++
		default:
			t.Fatalf("unexpected answer: %+v", a)
		}
	}
	require.Equal(t, 1, leases, fmt.Sprintf("one lease, one in flight (%d in flight)", inFlight))
	require.Equal(t, 1, inFlight)
}

// The batch statements qualify the record's columns, and only them.
func TestPrefixColumns(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`key, state`, `r.key, r.state`},
		{`NULL::bytea, req_size, false`, `NULL::bytea, r.req_size, false`},
		{`body, COALESCE(octet_length(req_body) = req_size, false)`, `r.body, COALESCE(octet_length(req_body) = req_size, false)`},
	} {
		require.Equal(t, tc.want, prefixColumns("r.", tc.in), tc.in)
	}
}

// A writer's statements find their rows through the key's index even on a
// generic plan made while the table was empty, as Postgres makes for a
// statement prepared on a fresh table: such a plan would otherwise scan the
// whole table for every batch, however large it grew (noSeqScan).
func TestPostgresWriterPlansUseIndexes(t *testing.T) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	s, err := Open(ctx, dsn, Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	conn, err := s.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	seqScans := func() int64 {
		t.Helper()
		_, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush(), pg_stat_clear_snapshot()`)
		require.NoError(t, err)
		var n int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`,
			schema, Table).Scan(&n))
		return n
	}
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	defer func() { _, _ = conn.Exec(ctx, `RESET plan_cache_mode`) }()
	before := seqScans()

	keys := []string{"stripe:evt_a", "stripe:evt_b", "stripe:evt_c"}
	var claims, finishes, releases []*op
	for i, k := range keys {
		o := newOp(ctx, opClaim, k, uint64(i+1))
		o.fingerprint = "fp"
		claims = append(claims, o)
	}
	run := func(queue func(*pgx.Batch)) {
		t.Helper()
		b := &pgx.Batch{}
		queue(b)
		require.NoError(t, conn.SendBatch(ctx, b).Close())
	}
	run(func(b *pgx.Batch) { s.queueClaims(b, claims) })
	for _, o := range claims {
		require.True(t, o.claimed, o.key)
	}
	for i, k := range keys[:2] {
		o := newOp(ctx, opFinish, k, uint64(i+1))
		o.state, o.resp = dedupe.Completed, dedupe.Response{Status: 200}
		finishes = append(finishes, o)
	}
	releases = append(releases, newOp(ctx, opRelease, keys[2], 3))
	run(func(b *pgx.Batch) { s.queueFinishes(b, finishes); s.queueReleases(b, releases) })
	for _, o := range append(finishes, releases...) {
		require.True(t, o.found, o.key)
	}
	require.Equal(t, before, seqScans(), "a writer's statement scanned the whole table")
}
