package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

var _ dedupe.Queue = (*Store)(nil)

func enqueueTest(t *testing.T, s *Store, key string) {
	t.Helper()
	rec, err := s.Enqueue(context.Background(), dedupe.Enqueue{Key: key + "\x1fledger", Fingerprint: "fp", MaxAge: time.Hour,
		Request: dedupe.NewRequest("application/json", "invoice.paid", []byte(`{"k":"`+key+`"}`), true)})
	require.NoError(t, err)
	require.Nil(t, rec)
}

// Two nodes take from one destination at once: every event is taken
// once, never by both (FOR UPDATE SKIP LOCKED, and the due time moved to
// the lease's end in the same statement).
func TestPostgresTakeIsExclusiveAcrossNodes(t *testing.T) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	nodes := []*Store{openTestPG(t, dsn, schema, dedupe.Options{}), openTestPG(t, dsn, schema, dedupe.Options{})}
	const n = 300
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enqueueTest(t, nodes[i%2], fmt.Sprintf("stripe:evt_%d", i))
		}()
	}
	wg.Wait()
	st, err := nodes[0].QueueStats(ctx, "ledger")
	require.NoError(t, err)
	require.Equal(t, n, st.Depth)

	var (
		mu    sync.Mutex
		taken = map[string]int{}
	)
	for _, node := range append(nodes, nodes...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := node.Take(ctx, "ledger", 7)
				if !assertNoError(t, err) || len(got) == 0 {
					return
				}
				mu.Lock()
				for _, a := range got {
					taken[a.Lease.Key]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, taken, n)
	for key, times := range taken {
		require.Equal(t, 1, times, key)
	}
	st, err = nodes[1].QueueStats(ctx, "ledger")
	require.NoError(t, err)
	require.Equal(t, dedupe.QueueStats{}, st, "every event in an attempt")
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// A schema made before the queue (no queue columns, indexes or tables, the
// count function without the depth) is brought up to date at Open, its
// rows kept.
func TestPostgresQueueMigratesAnOlderSchema(t *testing.T) {
	dsn := testPostgresDSN(t)
	schema := testSchema(t, dsn)
	s := openTestPG(t, dsn, schema, dedupe.Options{})
	l, _, err := s.Claim(ctx, "stripe:evt_old", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	require.NoError(t, s.Close())
	admin := pgtest.AdminConn(t, dsn, schema)
	for _, q := range []string{
		`DROP TABLE ` + DepthTable + `, ` + PausesTable,
		`DROP INDEX ` + dueIndex + `, ` + waitingIndex,
		`ALTER TABLE ` + Table + ` DROP COLUMN destination, DROP COLUMN queued_at, DROP COLUMN next_attempt,
			DROP COLUMN retries, DROP COLUMN reason`,
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	s = openTestPG(t, dsn, schema, dedupe.Options{})
	rec, err := s.Get(ctx, "stripe:evt_old")
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
	require.Empty(t, rec.Destination)
	enqueueTest(t, s, "stripe:evt_new")
	st, err := s.QueueStats(ctx, "ledger")
	require.NoError(t, err)
	require.Equal(t, 1, st.Depth, "the depth triggers run")
	stats, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 1, dedupe.Queued: 1}, stats)
}

// The attempts' settles ride in the writers' batches: 64 retries at once
// take far fewer commits than 64.
func TestPostgresAttemptSettlesAreBatched(t *testing.T) {
	dsn := testPostgresDSN(t)
	s := openTestPG(t, dsn, testSchema(t, dsn), dedupe.Options{})
	const n = 64
	for i := range n {
		enqueueTest(t, s, fmt.Sprintf("stripe:evt_%d", i))
	}
	got, err := s.Take(ctx, "ledger", n)
	require.NoError(t, err)
	require.Len(t, got, n)
	before, wrote := s.commits.Load(), s.writes.Load()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, a := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i%2 == 0 {
				assertNoError(t, s.Retry(ctx, a.Lease, time.Now().Add(time.Hour), dedupe.Response{Status: 503}))
			} else {
				assertNoError(t, s.FailAttempt(ctx, a.Lease, dedupe.Response{Status: 503}, "max_age passed"))
			}
		}()
	}
	close(start)
	wg.Wait()
	commits := s.commits.Load() - before
	require.Equal(t, uint64(n), s.writes.Load()-wrote, "every settle is a writer's op")
	require.Less(t, commits, uint64(n/2), "commits for %d settles", n)
	require.ErrorIs(t, s.Retry(ctx, got[0].Lease, time.Now(), dedupe.Response{}), dedupe.ErrLeaseLost)
	stats, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Queued: n / 2, dedupe.Failed: n / 2}, stats)
	st, err := s.QueueStats(ctx, "ledger")
	require.NoError(t, err)
	require.Equal(t, n/2, st.Depth)
	t.Logf("%d settles in %d commits", n, commits)
}
