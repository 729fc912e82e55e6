package lmdb

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestOnCommitSeesEveryWriteOnce(t *testing.T) {
	var mu sync.Mutex
	var commits, writes int
	var slowest time.Duration
	s := openTest(t, t.TempDir(), newClock(), func(o *Options) {
		o.NoSync = true
		o.OnCommit = func(batch int, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			commits++
			writes += batch
			slowest = max(slowest, d)
		}
	})
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d", i), "fp", nil)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	require.NoError(t, s.Ping(ctx))
	// The writer reports a commit before it answers the callers in it.
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, n+1, writes, "every claim and the ping, each in exactly one commit")
	require.GreaterOrEqual(t, commits, 1)
	require.LessOrEqual(t, commits, n+1)
	require.Positive(t, slowest)
}

func TestOnPruneCountsDeletions(t *testing.T) {
	c := newClock()
	var pruned []int
	s := openTest(t, t.TempDir(), c, func(o *Options) {
		o.Retention = time.Hour
		o.OnPrune = func(n int) { pruned = append(pruned, n) }
	})
	for i := range 5 {
		l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	}
	n, err := s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, pruned, "nothing deleted, nothing reported")

	c.Advance(2 * time.Hour)
	n, err = s.Prune(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = s.Prune(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int{3, 2}, pruned)
}
