package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// TestPostgresAnswerRetriedUntilItLands: an answer whose write an outage
// of Postgres makes fail is written again until it lands (its caller hears
// the failure); while it is pending this node refuses claims of its key at
// once. Retries stop at the lease's end: an answer whose lease passes while
// Postgres is down is given up, and the key is then taken over, as after a
// crash.
func TestPostgresAnswerRetriedUntilItLands(t *testing.T) {
	const opTimeout = 300 * time.Millisecond
	pg := pgtest.Start(t, "fsync = off")
	open := func(lease time.Duration) *Store {
		s, err := Open(ctx, pg.DSN(), Options{Options: dedupe.Options{Lease: lease, PruneInterval: -1},
			Schema: pgtest.Schema(t, pg.DSN()), OpTimeout: opTimeout})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	long, short := open(time.Minute), open(2*time.Second)
	for _, tc := range []struct {
		name       string
		s          *Store
		finish     dedupe.State
		stop, back func()
		// outlast: the outage lasts until the lease has passed.
		outlast bool
		want    dedupe.State
	}{
		{"complete, stalled", long, dedupe.Completed, pg.Pause, pg.Resume, false, dedupe.Completed},
		{"fail, stalled", long, dedupe.Failed, pg.Pause, pg.Resume, false, dedupe.Failed},
		{"complete, restarted", long, dedupe.Completed, pg.Stop, pg.Restart, false, dedupe.Completed},
		{"down past the lease", short, dedupe.Completed, pg.Stop, pg.Restart, true, dedupe.InFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, key := tc.s, "stripe:evt_retry_"+tc.name
			var (
				l   dedupe.Lease
				err error
			)
			require.Eventually(t, func() bool {
				// The case before may have restarted the server: a
				// connection that broke may fail the first claim.
				l, _, err = s.Claim(ctx, key, "fp", nil)
				return !errors.Is(err, dedupe.ErrUnavailable)
			}, 10*time.Second, 20*time.Millisecond)
			require.NoError(t, err)
			resp := dedupe.Response{Status: 200 + int(tc.finish), Body: []byte("answer")}
			finish := s.Complete
			if tc.finish == dedupe.Failed {
				finish = s.Fail
			}

			tc.stop()
			back := sync.OnceFunc(tc.back)
			defer back() // should the test fail during the outage
			callCtx, cancel := context.WithTimeout(ctx, opTimeout)
			err = finish(callCtx, l, resp)
			cancel()
			require.Error(t, err, "the caller hears the outage")
			require.Eventually(t, func() bool { return s.unsettled.Holds(key) }, 10*opTimeout, 10*time.Millisecond,
				"the write is being retried")
			start := time.Now()
			_, _, err = s.Claim(ctx, key, "fp", nil)
			require.ErrorIs(t, err, dedupe.ErrAnswerPending, "this node refuses the key while its answer is pending")
			require.Less(t, time.Since(start), opTimeout, "without asking the server")
			_, _, err = s.Redrive(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrAnswerPending, "and so is a redrive")
			if tc.outlast {
				<-time.After(time.Until(l.Until))
				require.Eventually(t, func() bool { return !s.unsettled.Holds(key) }, 5*time.Second, 20*time.Millisecond,
					"retries stop at the lease's end")
			}
			back()

			require.Eventually(t, func() bool { return !s.unsettled.Holds(key) }, 10*time.Second, 20*time.Millisecond)
			var rec dedupe.Record
			require.Eventually(t, func() bool {
				rec, err = s.Get(ctx, key) // a connection broken by the outage may fail it first
				return err == nil
			}, 10*time.Second, 20*time.Millisecond)
			require.Equal(t, tc.want, rec.State)
			var (
				l2     dedupe.Lease
				replay *dedupe.Record
			)
			require.Eventually(t, func() bool {
				// A writer's connection the restart broke may fail the
				// first claim (503 for a gateway, which retries).
				l2, replay, err = s.Claim(ctx, key, "fp", nil)
				return !errors.Is(err, dedupe.ErrUnavailable)
			}, 10*time.Second, 20*time.Millisecond)
			require.NoError(t, err)
			if tc.want == dedupe.InFlight {
				require.Nil(t, replay, "given up at the lease's end: the key is taken over")
				require.NotZero(t, l2.Token)
				return
			}
			require.NotNil(t, replay, "the retry of the gateway is replayed")
			require.Equal(t, resp, replay.Response)
		})
	}
}

// TestRetryable: a finish is written again after any failure of the store
// but one that refuses the values themselves.
func TestRetryable(t *testing.T) {
	pgErr := func(code string) error {
		return &pgError{what: "finish", cause: &pgconn.PgError{Code: code}}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgError{what: "finish", cause: context.DeadlineExceeded}, true},
		{&pgError{what: "finish", cause: errors.New("unexpected EOF")}, true},
		{pgErr("53100"), true}, // disk full
		{pgErr("57P01"), true}, // admin shutdown (a restart)
		{pgErr("40P01"), true}, // deadlock
		{pgErr("25006"), true}, // read only: a standby until the failover ends
		{pgErr("23505"), false},
		{pgErr("22021"), false},
		{dedupe.ErrClosed, false},
		{dedupe.ErrLeaseLost, false},
		{fmt.Errorf("%w: gave up", context.DeadlineExceeded), false},
	} {
		require.Equal(t, tc.want, retryable(tc.err), "%v", tc.err)
	}
}

// TestAbandonNeverBlocks: a stall that fills the clean-up queue costs the
// claims past it their clean-up (counted), never a wait or a goroutine.
func TestAbandonNeverBlocks(t *testing.T) {
	s := &Store{abandons: make(chan claimRef, 2)}
	s.opts.SetDefaults()
	for i := range 5 {
		s.abandon(fmt.Sprintf("stripe:evt_%d", i), uint64(i+1))
	}
	require.Len(t, s.abandons, 2)
	require.EqualValues(t, 3, s.abandonsDropped.Load())
}

// TestPostgresStallPilesUpNoGoroutines: claims that a stalled Postgres
// leaves with an unknown outcome are cleaned up by the one sweeper, not a
// goroutine each waiting for a connection.
func TestPostgresStallPilesUpNoGoroutines(t *testing.T) {
	const (
		opTimeout = 300 * time.Millisecond
		claims    = 200
	)
	pg := pgtest.Start(t, "fsync = off")
	s, err := Open(ctx, pg.DSN(), Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, OpTimeout: opTimeout})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, _, err = s.Claim(ctx, "stripe:evt_warm", "fp", nil)
	require.NoError(t, err)
	base := runtime.NumGoroutine()

	pg.Pause()
	defer pg.Resume()
	var wg sync.WaitGroup
	for i := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			callCtx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			_, _, err := s.Claim(callCtx, fmt.Sprintf("stripe:evt_pile_%d", i), "fp", nil)
			require.Error(t, err)
		}()
	}
	wg.Wait()
	extra := runtime.NumGoroutine() - base
	t.Logf("%d claims in a stall: %d goroutines more once they were answered", claims, extra)
	require.Less(t, extra, claims/4)
}
