package lmdb

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestPruneReindexesAMisplacedEntry(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	l, _, err := s.Claim(ctx, "k:misplaced", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	rec, err := s.Get(ctx, "k:misplaced")
	require.NoError(t, err)
	// Move the record's index entry into the past, as an older layout or
	// a bug could have left it.
	require.NoError(t, s.write(ctx, func(txn *mdb.Txn) error {
		if err := txn.Del(s.expiry, expiryKey(nil, rec.ExpiresAt, rec.Key), nil); err != nil {
			return err
		}
		return txn.Put(s.expiry, expiryKey(nil, c.Now().Add(-time.Minute), rec.Key), nil, 0)
	}))

	n, err := s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n, "the record's own expiry decides")
	_, err = s.Get(ctx, "k:misplaced")
	require.NoError(t, err)
	checkConsistent(t, s) // re-indexed at its real expiry

	c.Advance(time.Hour)
	n, err = s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n, "and pruned when that comes")
	require.Zero(t, s.indexLen(t))
}

func TestBackgroundPrunerDeletesEverythingExpired(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c, func(o *Options) {
		o.PruneInterval = 5 * time.Millisecond
		o.PruneBatch = 3 // fewer than there is to prune: several batches
	})
	for i := 0; i < 10; i++ {
		l, _, err := s.Claim(ctx, fmt.Sprintf("old:%d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	}
	_, _, err := s.Claim(ctx, "stripe:abandoned", "fp", nil) // never finished
	require.NoError(t, err)
	c.Advance(90 * time.Minute) // retention 1h; lease 1m + abandon 1h
	l, _, err := s.Claim(ctx, "stripe:young", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))

	require.Eventually(t, func() bool {
		st, err := s.Stats(ctx)
		return err == nil && st[dedupe.Completed] == 1 && st[dedupe.InFlight] == 0
	}, 5*time.Second, 5*time.Millisecond)
	_, err = s.Get(ctx, "stripe:young")
	require.NoError(t, err)
	require.Equal(t, 1, s.indexLen(t))
}

// TestDataFileStopsGrowingUnderSteadyTraffic runs the same day of traffic
// again and again (deliver, complete, let the retention pass, prune) and
// watches data.mdb: once LMDB's free list holds a day's worth of pages, the
// file must stop growing. A reader slot that never ends (a crashed process
// that nobody cleared) pins every page freed after it, and the same test
// then sees the file grow with every day: that control shows the
// measurement can tell the difference.
func TestDataFileStopsGrowingUnderSteadyTraffic(t *testing.T) {
	const (
		days       = 24
		perDay     = 150
		warmUpDays = 4
	)
	body := bytes.Repeat([]byte("r"), 2<<10)
	run := func(t *testing.T, staleReader bool) []int64 {
		dir := t.TempDir()
		c := newClock()
		s := openTest(t, dir, c, func(o *Options) { o.NoSync = true; o.MapSize = 64 << 20 })
		var sizes []int64
		for day := 0; day < days; day++ {
			for i := 0; i < perDay; i++ {
				l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%d_%d", day, i), "fp", nil)
				require.NoError(t, err)
				require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}))
			}
			if day == 0 && staleReader {
				txn, err := s.env.BeginTxn(nil, mdb.Readonly)
				require.NoError(t, err)
				t.Cleanup(txn.Abort)
			}
			c.Advance(2 * time.Hour)
			s.pruneAll(ctx)
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Empty(t, st, "day %d: everything expired was pruned", day)
			sizes = append(sizes, dataFileSize(t, dir))
		}
		return sizes
	}

	t.Run("pruned", func(t *testing.T) {
		sizes := run(t, false)
		// After the warm-up the free list may still settle by a page or
		// two; then the size does not move at all.
		require.LessOrEqual(t, sizes[days-1], sizes[warmUpDays-1]*102/100, "sizes %v", sizes)
		for day := days - 8; day < days; day++ {
			require.Equal(t, sizes[days-8], sizes[day], "day %d: the file still grows (sizes %v)", day, sizes)
		}
		written := int64(days * perDay * len(body))
		require.Less(t, sizes[days-1], written/4, "the file holds about a day of records, not %d days", days)
	})
	t.Run("control: a stale reader pins freed pages", func(t *testing.T) {
		sizes := run(t, true)
		require.Greater(t, sizes[days-1], 3*sizes[warmUpDays-1], "sizes %v", sizes)
	})
}
