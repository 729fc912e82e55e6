package lmdb

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// TestAnswerRetriedUntilItLands: an answer whose commit fails (a full
// disk) is written again until it lands, and this store refuses claims of
// its key meanwhile; once the lease has passed, the retries stop and the
// key is taken over, as after a crash.
func TestAnswerRetriedUntilItLands(t *testing.T) {
	diskFull := func() error { return syscall.ENOSPC }
	for _, tc := range []struct {
		name       string
		finish     func(s *Store) func(context.Context, dedupe.Lease, dedupe.Response) error
		leasePass  bool
		want       dedupe.State
		wantStatus int
	}{
		{"complete", func(s *Store) func(context.Context, dedupe.Lease, dedupe.Response) error { return s.Complete }, false, dedupe.Completed, 201},
		{"fail", func(s *Store) func(context.Context, dedupe.Lease, dedupe.Response) error { return s.Fail }, false, dedupe.Failed, 201},
		{"lease passes first", func(s *Store) func(context.Context, dedupe.Lease, dedupe.Response) error { return s.Complete }, true, dedupe.InFlight, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			s := openTest(t, t.TempDir(), c)
			l, _, err := s.Claim(ctx, "r:key", "fp", nil)
			require.NoError(t, err)

			s.commitHook.Store(&diskFull)
			err = tc.finish(s)(ctx, l, dedupe.Response{Status: 201})
			require.ErrorIs(t, err, dedupe.ErrUnavailable)
			require.Contains(t, err.Error(), "retried in the background")
			require.True(t, s.unsettled.Holds("r:key"))
			_, _, err = s.Claim(ctx, "r:key", "fp", nil)
			require.ErrorIs(t, err, dedupe.ErrAnswerPending, "the key is refused while its answer is pending")
			_, _, err = s.Redrive(ctx, "r:key")
			require.ErrorIs(t, err, dedupe.ErrAnswerPending, "and so is a redrive")

			if tc.leasePass {
				c.Advance(s.Lease())
				require.Eventually(t, func() bool { return !s.unsettled.Holds("r:key") }, 5*time.Second, 10*time.Millisecond,
					"retries stop at the lease's end")
			}
			s.commitHook.Store(nil)
			require.Eventually(t, func() bool { return !s.unsettled.Holds("r:key") }, 5*time.Second, 10*time.Millisecond)
			rec, err := s.Get(ctx, "r:key")
			require.NoError(t, err)
			require.Equal(t, tc.want, rec.State)
			require.Equal(t, tc.wantStatus, rec.Response.Status)
			l2, replay, err := s.Claim(ctx, "r:key", "fp", nil)
			require.NoError(t, err)
			if tc.want == dedupe.InFlight {
				require.Nil(t, replay, "given up at the lease's end: the key is taken over")
				require.NotZero(t, l2.Token)
				return
			}
			require.NotNil(t, replay, "a later delivery is replayed")
			checkConsistent(t, s)
		})
	}
}
