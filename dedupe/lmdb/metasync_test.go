package lmdb

import (
	"sync"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// recordMetaSync makes every commit of s note whether it runs with the
// meta page's sync deferred (MDB_NOMETASYNC, read by LMDB at commit).
// release, if not nil, holds each commit until it receives.
func recordMetaSync(t *testing.T, s *Store, release <-chan struct{}) func() []bool {
	var mu sync.Mutex
	var deferred []bool
	hook := func() error {
		flags, err := s.env.Flags()
		require.NoError(t, err)
		mu.Lock()
		deferred = append(deferred, flags&mdb.NoMetaSync != 0)
		mu.Unlock()
		if release != nil {
			<-release
		}
		return nil
	}
	s.commitHook.Store(&hook)
	t.Cleanup(func() { s.commitHook.Store(nil) })
	return func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return append([]bool(nil), deferred...)
	}
}

// TestClaimCommitDefersOnlyTheMetaSync: with the deferral on, a commit of
// claims (or kept copies) only is made with the meta page's sync deferred; a commit holding an answer (or any
// other write) is fully synced, and so is everything after it; a store
// opened with NoSync is left as it is.
func TestClaimCommitDefersOnlyTheMetaSync(t *testing.T) {
	tests := []struct {
		name   string
		noSync bool
		writes func(t *testing.T, s *Store)
		want   []bool // per commit: was the meta sync deferred
	}{
		{"a claim alone", false, func(t *testing.T, s *Store) {
			_, _, err := s.Claim(ctx, "stripe:evt_1", "fp", nil)
			require.NoError(t, err)
		}, []bool{true}},
		{"claim then complete", false, func(t *testing.T, s *Store) {
			l, _, err := s.Claim(ctx, "stripe:evt_1", "fp", nil)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
		}, []bool{true, false}},
		{"claim then fail then release", false, func(t *testing.T, s *Store) {
			l, _, err := s.Claim(ctx, "stripe:evt_1", "fp", nil)
			require.NoError(t, err)
			require.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 400}))
			l, _, err = s.Claim(ctx, "stripe:evt_2", "fp", nil)
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, l))
		}, []bool{true, false, true, false}},
		{"a kept copy, then other writes", false, func(t *testing.T, s *Store) {
			now := newClock().Now()
			require.NoError(t, s.Keep(ctx, dedupe.Record{Key: "stripe:evt_1", State: dedupe.Completed,
				CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}))
			require.NoError(t, s.Ping(ctx))
			require.NoError(t, s.ForceDelete(ctx, "stripe:evt_1"))
		}, []bool{true, false, false}},
		{"NoSync store", true, func(t *testing.T, s *Store) {
			l, _, err := s.Claim(ctx, "stripe:evt_1", "fp", nil)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
		}, []bool{false, false}},
	}
	t.Run("off, as shipped", func(t *testing.T) {
		s := openTest(t, t.TempDir(), newClock())
		commits := recordMetaSync(t, s, nil)
		_, _, err := s.Claim(ctx, "stripe:evt_1", "fp", nil)
		require.NoError(t, err)
		require.Equal(t, []bool{false}, commits())
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), newClock(), func(o *Options) { o.NoSync = tt.noSync })
			s.deferMeta.Store(true)
			commits := recordMetaSync(t, s, nil)
			tt.writes(t, s)
			require.Equal(t, tt.want, commits())
			flags, err := s.env.Flags()
			require.NoError(t, err)
			require.Zero(t, flags&mdb.NoMetaSync, "the flag never outlives its commit")
		})
	}
}

// TestMixedBatchStaysSynced: claims that share a commit with an answer are
// committed fully synced with it, since the answer must be durable.
func TestMixedBatchStaysSynced(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	s.deferMeta.Store(true)
	l, _, err := s.Claim(ctx, "stripe:evt_0", "fp", nil)
	require.NoError(t, err)

	release := make(chan struct{})
	commits := recordMetaSync(t, s, release)
	// The first commit (a claim) is held until the answer and two more
	// claims are queued behind it; they are then taken as one batch.
	var wg sync.WaitGroup
	claim := func(key string) {
		defer wg.Done()
		_, _, err := s.Claim(ctx, key, "fp", nil)
		require.NoError(t, err)
	}
	wg.Add(1)
	go claim("stripe:evt_1")
	waitQueued(t, s, 0, func() bool { return len(commits()) == 1 })
	wg.Add(3)
	go claim("stripe:evt_2")
	go claim("stripe:evt_3")
	go func() {
		defer wg.Done()
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	}()
	waitQueued(t, s, 3, nil)
	close(release)
	wg.Wait()
	require.Equal(t, []bool{true, false}, commits(), "the claim alone deferred; the batch with the answer synced")
}

// waitQueued waits until n ops wait for the writer and, if cond is not
// nil, cond holds: goroutines hand their ops over in their own time.
func waitQueued(t *testing.T, s *Store, n int64, cond func() bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		return s.queued.Load() == n && (cond == nil || cond())
	}, 10*time.Second, time.Millisecond)
}
