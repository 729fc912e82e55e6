package lmdb

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/internal/smalldisk"

	"github.com/webhookd/webhookd/dedupe"
)

// checkConsistent walks the whole store: every record decodes and has its
// one expiry index entry, and the index holds nothing else.
func checkConsistent(t *testing.T, s *Store) {
	t.Helper()
	require.NoError(t, s.view(func(txn *mdb.Txn) error {
		cur, err := txn.OpenCursor(s.records)
		if err != nil {
			return err
		}
		defer cur.Close()
		n := 0
		for k, v, err := cur.Get(nil, nil, mdb.First); err == nil; k, v, err = cur.Get(nil, nil, mdb.Next) {
			rec, derr := decodeRecord(string(k), v, allBodies)
			if derr != nil {
				return derr
			}
			if _, gerr := txn.Get(s.expiry, expiryKey(nil, rec.ExpiresAt, rec.Key)); gerr != nil {
				return fmt.Errorf("record %s has no index entry: %w", rec.Key, gerr)
			}
			n++
		}
		st, err := txn.Stat(s.expiry)
		if err != nil {
			return err
		}
		if int(st.Entries) != n {
			return fmt.Errorf("%d index entries for %d records", st.Entries, n)
		}
		return nil
	}))
}

// snapshot returns every record, for before/after comparisons.
func snapshot(t *testing.T, s *Store) []dedupe.Record {
	t.Helper()
	recs, err := s.List(ctx, dedupe.ListOptions{})
	require.NoError(t, err)
	return recs
}

// seedForFaults leaves one COMPLETED key and one IN_FLIGHT key (returned).
func seedForFaults(t *testing.T, s *Store) dedupe.Lease {
	t.Helper()
	l, _, err := s.Claim(ctx, "f:done", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: []byte("ok")}))
	held, _, err := s.Claim(ctx, "f:held", "fp", nil)
	require.NoError(t, err)
	return held
}

// writeMix runs every kind of write at once, so that they share commits,
// and returns their errors by name.
func writeMix(s *Store, held dedupe.Lease) map[string]error {
	var mu sync.Mutex
	out := map[string]error{}
	set := func(name string, err error) {
		mu.Lock()
		out[name] = err
		mu.Unlock()
	}
	var wg sync.WaitGroup
	run := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			set(name, fn())
		}()
	}
	for i := 0; i < 16; i++ {
		key := fmt.Sprintf("f:new:%02d", i)
		run("claim "+key, func() error { _, _, err := s.Claim(ctx, key, "fp", nil); return err })
	}
	run("complete held", func() error { return s.Complete(ctx, held, dedupe.Response{Status: 201}) })
	stale := held
	stale.Token++
	run("release stale", func() error { return s.Release(ctx, stale) })
	run("delete done", func() error { return s.Delete(ctx, "f:done") })
	run("prune", func() error { _, err := s.Prune(ctx, 10); return err })
	run("ping", func() error { return s.Ping(ctx) })
	wg.Wait()
	return out
}

func TestFailedCommitAnswersEveryOpUnavailable(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	held := seedForFaults(t, s)
	before := snapshot(t, s)

	diskFull := func() error { return syscall.ENOSPC }
	s.commitHook.Store(&diskFull)
	for name, err := range writeMix(s, held) {
		require.ErrorIs(t, err, dedupe.ErrUnavailable, name)
		require.Contains(t, err.Error(), "no space left on device", name)
	}
	require.Equal(t, before, snapshot(t, s), "a failed commit leaves nothing behind")
	checkConsistent(t, s)

	// Reads are not affected: a replay is still answered.
	_, rec, err := s.Claim(ctx, "f:done", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
	require.True(t, s.unsettled.Holds("f:held"), "the answer is written again")

	// The retried answer lands once commits do again.
	s.commitHook.Store(nil)
	require.Eventually(t, func() bool { return s.unsettled.Len() == 0 }, 5*time.Second, 10*time.Millisecond)
	got, err := s.Get(ctx, "f:held")
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, got.State)
	require.Equal(t, 201, got.Response.Status)
	for name, err := range writeMix(s, held) {
		if name == "release stale" || name == "complete held" {
			require.ErrorIs(t, err, dedupe.ErrLeaseLost, "a logical failure is answered as such, alone")
			continue
		}
		require.NoError(t, err, name)
	}
	_, err = s.Get(ctx, "f:done")
	require.ErrorIs(t, err, dedupe.ErrNotFound)
	checkConsistent(t, s)
}

func TestNobodyIsAnsweredBeforeTheCommit(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hold := func() error {
		once.Do(func() { close(entered) })
		<-release
		return nil
	}
	s.commitHook.Store(&hold)

	answered := make(chan string, 8)
	for i := 0; i < 8; i++ {
		key := fmt.Sprintf("wait:%d", i)
		go func() {
			_, _, err := s.Claim(ctx, key, "fp", nil)
			if err != nil {
				answered <- "error: " + key + ": " + err.Error()
				return
			}
			answered <- key
		}()
	}
	<-entered
	// The writer holds a transaction with at least one claim in it, not
	// yet committed: nobody may have heard back, and readers must not see
	// the claim either.
	select {
	case a := <-answered:
		t.Fatalf("%s answered before its commit", a)
	case <-time.After(50 * time.Millisecond):
	}
	for i := 0; i < 8; i++ {
		_, err := s.Get(ctx, fmt.Sprintf("wait:%d", i))
		require.ErrorIs(t, err, dedupe.ErrNotFound)
	}
	close(release)
	for i := 0; i < 8; i++ {
		a := <-answered
		require.NotContains(t, a, "error", a)
	}
	s.commitHook.Store(nil)
}

func TestDiskFullIsUnavailableAndRecovers(t *testing.T) {
	dir := smalldisk.Mount(t, 4<<20)
	c := newClock()
	s := openTest(t, dir, c)
	body := bytes.Repeat([]byte("b"), 16<<10)

	// Deliver until the disk refuses a write.
	var acked []string
	var failedKey string
	var failedLease dedupe.Lease
	for i := 0; i < 1000 && failedKey == ""; i++ {
		key := fmt.Sprintf("full:%04d", i)
		l, _, err := s.Claim(ctx, key, "fp", nil)
		if err != nil {
			require.ErrorIs(t, err, dedupe.ErrUnavailable)
			require.Contains(t, err.Error(), "no space left on device")
			failedKey = key
			break
		}
		if err := s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}); err != nil {
			require.ErrorIs(t, err, dedupe.ErrUnavailable)
			failedKey, failedLease = key, l
			break
		}
		acked = append(acked, key)
	}
	require.NotEmpty(t, failedKey, "a 4 MiB disk must fill up")
	require.NotEmpty(t, acked)

	check := func(s *Store) {
		t.Helper()
		checkConsistent(t, s)
		for _, k := range acked {
			rec, err := s.Get(ctx, k)
			require.NoError(t, err, k)
			require.Equal(t, dedupe.Completed, rec.State, k)
			require.Equal(t, body, rec.Response.Body, k)
		}
		rec, err := s.Get(ctx, failedKey)
		if failedLease.Token == 0 {
			require.ErrorIs(t, err, dedupe.ErrNotFound, "the refused claim left nothing")
		} else {
			require.NoError(t, err)
			require.Equal(t, dedupe.InFlight, rec.State, "the refused completion left the claim as it was")
			require.Equal(t, failedLease.Token, rec.Token)
		}
	}
	check(s)
	if failedLease.Token == 0 {
		require.ErrorIs(t, s.Ping(ctx), dedupe.ErrUnavailable, "readiness fails with the claims")
	}
	// Replays keep being answered while the disk is full.
	_, rec, err := s.Claim(ctx, acked[0], "fp", nil)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)

	// A restart on the full disk finds the store intact.
	require.NoError(t, s.Close())
	s = openTest(t, dir, c)
	check(s)

	// Space returns: the same event goes through, and so do new ones.
	smalldisk.Resize(t, dir, 64<<20)
	require.NoError(t, s.Ping(ctx))
	l := failedLease
	if l.Token == 0 {
		l, _, err = s.Claim(ctx, failedKey, "fp", nil)
		require.NoError(t, err)
	}
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}))
	for i := 0; i < 20; i++ {
		l, _, err := s.Claim(ctx, fmt.Sprintf("after:%d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}))
	}
	got, err := s.Get(ctx, failedKey)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, got.State)
	checkConsistent(t, s)
}

func TestReadersWaitForASlotInsteadOfFailing(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock(), func(o *Options) { o.MaxReaders = 4 })
	require.Equal(t, 3, cap(s.readers), "three quarters of the slots")
	release := make(chan struct{})
	var (
		mu      sync.Mutex
		inside  int
		highest int
	)
	errs := make(chan error, 12)
	for i := 0; i < 12; i++ {
		go func() {
			errs <- s.view(func(*mdb.Txn) error {
				mu.Lock()
				inside++
				highest = max(highest, inside)
				mu.Unlock()
				<-release
				mu.Lock()
				inside--
				mu.Unlock()
				return nil
			})
		}()
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return inside == 3 }, 5*time.Second, time.Millisecond)
	close(release)
	for i := 0; i < 12; i++ {
		require.NoError(t, <-errs, "LMDB would answer MDB_READERS_FULL past 4 readers")
	}
	require.Equal(t, 3, highest)
}

// dataFileSize is the size of the LMDB data file in dir.
func dataFileSize(t *testing.T, dir string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, DataFile))
	require.NoError(t, err)
	return fi.Size()
}
