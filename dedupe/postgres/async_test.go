package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// logCommitMode records, for every row a writer's statement inserts,
// updates or deletes, the synchronous_commit its transaction runs with: the setting
// its commit will be made under.
func logCommitMode(t *testing.T, admin *pgx.Conn, schema string) func() map[string][]string {
	t.Helper()
	log := pgx.Identifier{schema, "commit_mode"}.Sanitize()
	for _, q := range []string{
		`CREATE TABLE ` + log + ` (id bigserial PRIMARY KEY, key text NOT NULL, mode text NOT NULL)`,
		`CREATE FUNCTION log_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $f$
			BEGIN
				INSERT INTO ` + log + ` (key, mode) VALUES (CASE TG_OP WHEN 'DELETE' THEN OLD.key ELSE NEW.key END, current_setting('synchronous_commit'));
				RETURN NULL;
			END $f$`,
		`CREATE TRIGGER log_commit_mode AFTER INSERT OR UPDATE OR DELETE ON ` + Table + ` FOR EACH ROW EXECUTE FUNCTION log_commit_mode()`,
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	return func() map[string][]string {
		rows, err := admin.Query(ctx, `SELECT key, mode FROM commit_mode ORDER BY id`)
		require.NoError(t, err)
		modes := map[string][]string{}
		for rows.Next() {
			var key, mode string
			require.NoError(t, rows.Scan(&key, &mode))
			modes[key] = append(modes[key], mode)
		}
		require.NoError(t, rows.Err())
		return modes
	}
}

// TestClaimOnlyBatchCommitsAsynchronously: with Options.asyncClaims, a
// batch of claims only runs with synchronous_commit off; one that holds a
// completion, a failure or a release, claims batched with it included,
// stays synchronous. Without it, every batch is synchronous.
func TestClaimOnlyBatchCommitsAsynchronously(t *testing.T) {
	for _, async := range []bool{true, false} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) { testClaimCommitMode(t, async) })
	}
}

func testClaimCommitMode(t *testing.T, async bool) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	s, err := Open(ctx, dsn, Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, Schema: schema, Writers: 1, asyncClaims: async})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	admin := pgtest.AdminConn(t, dsn, schema)
	modes := logCommitMode(t, admin, schema)

	done, _, err := s.Claim(ctx, "stripe:evt_done", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, done, dedupe.Response{Status: 200}))
	failed, _, err := s.Claim(ctx, "stripe:evt_failed", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Fail(ctx, failed, dedupe.Response{Status: 400}))
	released, _, err := s.Claim(ctx, "stripe:evt_released", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, released))

	// A mixed batch: the writer is parked on a completion whose row the
	// admin holds locked, while a claim and another completion queue.
	parked, _, err := s.Claim(ctx, "stripe:evt_parked", "fp", nil)
	require.NoError(t, err)
	mixed, _, err := s.Claim(ctx, "stripe:evt_mixed_done", "fp", nil)
	require.NoError(t, err)
	tx, err := admin.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM `+Table+` WHERE key = $1 FOR UPDATE`, parked.Key)
	require.NoError(t, err)
	commits := s.commits.Load()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); require.NoError(t, s.Complete(ctx, parked, dedupe.Response{Status: 200})) }()
	require.Eventually(t, func() bool { return s.commits.Load() == commits+1 }, 5*time.Second, time.Millisecond)
	go func() {
		defer wg.Done()
		_, _, err := s.Claim(ctx, "stripe:evt_mixed_claim", "fp", nil)
		require.NoError(t, err)
	}()
	go func() { defer wg.Done(); require.NoError(t, s.Complete(ctx, mixed, dedupe.Response{Status: 200})) }()
	require.Eventually(t, func() bool { return s.queued.Load() == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	require.Equal(t, commits+2, s.commits.Load(), "the claim and the completion shared one batch")

	claim := "on"
	if async {
		claim = "off"
	}
	require.Equal(t, map[string][]string{
		"stripe:evt_done":        {claim, "on"},
		"stripe:evt_failed":      {claim, "on"},
		"stripe:evt_released":    {claim, "on"},
		"stripe:evt_parked":      {claim, "on"},
		"stripe:evt_mixed_done":  {claim, "on"},
		"stripe:evt_mixed_claim": {"on"},
	}, modes())
}
