package lmdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// blockCommits makes every commit wait until the returned function is
// called, as a disk whose fsync never returns would; entered is closed when
// the first commit starts waiting.
func blockCommits(t *testing.T, s *Store) (entered <-chan struct{}, unblock func()) {
	in := make(chan struct{})
	release := make(chan struct{})
	var once, done sync.Once
	hold := func() error {
		once.Do(func() { close(in) })
		<-release
		return nil
	}
	s.commitHook.Store(&hold)
	unblock = func() {
		done.Do(func() {
			s.commitHook.Store(nil)
			close(release)
		})
	}
	t.Cleanup(unblock)
	return in, unblock
}

// TestStuckCommitHonoursTheDeadline: while a commit does not return, a
// write waiting for it and a write queued behind it both give up at their
// deadline. The claim that was in the stuck commit takes effect once the
// disk answers, and then simply expires with its lease; the one still
// queued never does.
func TestStuckCommitHonoursTheDeadline(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	entered, unblock := blockCommits(t, s)

	claim := func(key string, timeout time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		_, _, err := s.Claim(ctx, key, "fp")
		return time.Since(start), err
	}
	stuck := make(chan error, 1)
	go func() {
		_, err := claim("stripe:evt_in_commit", 200*time.Millisecond)
		stuck <- err
	}()
	<-entered
	took, err := claim("stripe:evt_queued", 100*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a queued write gives up")
	require.Less(t, took, 2*time.Second)
	select {
	case err := <-stuck:
		require.ErrorIs(t, err, context.DeadlineExceeded, "a write waiting for its commit gives up")
	case <-time.After(2 * time.Second):
		t.Fatal("a write waiting for a stuck commit ignored its deadline")
	}
	pctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.Ping(pctx), context.DeadlineExceeded, "readiness fails while writes are stuck")

	unblock()
	require.NoError(t, s.Ping(ctx))
	_, err = s.Get(ctx, "stripe:evt_queued")
	require.ErrorIs(t, err, dedupe.ErrNotFound, "the write that gave up in the queue never ran")
	rec, err := s.Get(ctx, "stripe:evt_in_commit")
	require.NoError(t, err, "the write already in the commit took effect")
	require.Equal(t, dedupe.InFlight, rec.State)
	_, _, err = s.Claim(ctx, "stripe:evt_in_commit", "fp")
	require.ErrorIs(t, err, dedupe.ErrInFlight, "its lease runs, with nobody forwarding")
	c.Advance(time.Minute)
	l, rec2, err := s.Claim(ctx, "stripe:evt_in_commit", "fp")
	require.NoError(t, err, "then it expires like any abandoned claim")
	require.Nil(t, rec2)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
}

// TestWriteOfACallerGoneDoesNothing: a write whose caller has given up by
// the time the writer runs it changes nothing, so a claim is never made for
// a delivery that was already answered 503.
func TestWriteOfACallerGoneDoesNothing(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 50 {
		key := fmt.Sprintf("stripe:evt_gone_%d", i)
		_, _, err := s.Claim(gone, key, "fp")
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.Get(ctx, key)
		require.ErrorIs(t, err, dedupe.ErrNotFound, key)
	}
}

// TestSettleOfACallerGoneStillLands: a complete or release whose caller
// has stopped waiting (its store deadline ran out) still takes effect when
// the writer gets to it. Skipped, it would leave the key IN_FLIGHT until
// the lease passes, and the provider's next delivery of an event the core
// service already has would be forwarded again.
func TestSettleOfACallerGoneStillLands(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name   string
		settle func(l dedupe.Lease) error
		check  func(t *testing.T, key string)
	}{
		{"complete", func(l dedupe.Lease) error {
			return s.Complete(gone, l, dedupe.Response{Status: 200})
		}, func(t *testing.T, key string) {
			rec, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
		}},
		{"fail", func(l dedupe.Lease) error {
			return s.Fail(gone, l, dedupe.Response{Status: 400})
		}, func(t *testing.T, key string) {
			rec, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, rec.State)
		}},
		{"release", func(l dedupe.Lease) error {
			return s.Release(gone, l)
		}, func(t *testing.T, key string) {
			_, err := s.Get(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrNotFound)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := "stripe:evt_settle_" + tt.name
			l, _, err := s.Claim(ctx, key, "fp")
			require.NoError(t, err)
			// The caller may hear its own give-up, or the answer if the
			// writer was quicker; either way the write lands.
			_ = tt.settle(l)
			require.Eventually(t, func() bool {
				rec, err := s.Get(ctx, key)
				return errors.Is(err, dedupe.ErrNotFound) || (err == nil && rec.State != dedupe.InFlight)
			}, 5*time.Second, 5*time.Millisecond)
			tt.check(t, key)
		})
	}
}
