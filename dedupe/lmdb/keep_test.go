package lmdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// waitQueued waits until n ops wait for the writer: goroutines hand their
// ops over in their own time.
func waitQueued(t *testing.T, s *Store, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.queued.Load() == n }, 10*time.Second, time.Millisecond)
}

// TestKeepLaterWaitsForNoCommit: KeepLater returns while the writer is
// held in a commit, and the copy is written ahead of any write handed to
// the writer after it: a ForceDelete that follows removes it, a Ping that
// follows finds it written.
func TestKeepLaterWaitsForNoCommit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after func(s *Store) error
		want  error // Get's, once after has answered
	}{
		{"then a write", func(s *Store) error { return s.Ping(ctx) }, nil},
		{"then a delete", func(s *Store) error { return s.ForceDelete(ctx, "stripe:evt_1") }, dedupe.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			s := openTest(t, t.TempDir(), c)
			entered, unblock := blockCommits(t, s)
			held := make(chan error, 1)
			go func() { held <- s.Ping(ctx) }()
			<-entered
			now := c.Now()
			require.NoError(t, s.KeepLater(dedupe.Record{Key: "stripe:evt_1", State: dedupe.Completed,
				CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}), "returns while the writer is held")
			after := make(chan error, 1)
			go func() { after <- tt.after(s) }()
			waitQueued(t, s, 2)
			unblock()
			require.NoError(t, <-held)
			require.NoError(t, <-after)
			_, err := s.Get(ctx, "stripe:evt_1")
			if tt.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.want)
			}
		})
	}
}
