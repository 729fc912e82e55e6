package lmdb

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestBackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := openTest(t, dir, c, func(o *Options) { o.NoSync = true })
	body := bytes.Repeat([]byte("k"), 4<<10)
	for i := 0; i < 400; i++ {
		l, _, err := s.Claim(ctx, fmt.Sprintf("seed:%03d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, ContentType: "text/plain", Body: body}))
	}
	// Deleting most of them leaves free pages that a compacted copy omits.
	for i := 100; i < 400; i++ {
		require.NoError(t, s.Delete(ctx, fmt.Sprintf("seed:%03d", i)))
	}

	// Writers keep claiming and completing throughout the backup.
	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		mu     sync.Mutex
		acked  []string
		failed error
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("live:%d:%05d", w, i)
				l, _, err := s.Claim(ctx, key, "fp", nil)
				if err == nil {
					err = s.Complete(ctx, l, dedupe.Response{Status: 201, Body: body[:64]})
				}
				mu.Lock()
				if err != nil {
					failed = err
				} else {
					acked = append(acked, key)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}(w)
	}
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 50 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	ackedBefore := append([]string(nil), acked...)
	mu.Unlock()

	dest := filepath.Join(t.TempDir(), "backup")
	require.NoError(t, s.Backup(dest))
	stop.Store(true)
	wg.Wait()
	require.NoError(t, failed)

	entries, err := os.ReadDir(dest)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only data.mdb, no partial file")
	require.Less(t, dataFileSize(t, dest), dataFileSize(t, dir)/2, "the copy is compacted")

	b := openTest(t, dest, c)
	checkConsistent(t, b)
	for i := 0; i < 400; i++ {
		key := fmt.Sprintf("seed:%03d", i)
		want, werr := s.Get(ctx, key)
		got, gerr := b.Get(ctx, key)
		if i >= 100 {
			require.ErrorIs(t, werr, dedupe.ErrNotFound)
			require.ErrorIs(t, gerr, dedupe.ErrNotFound, key)
			continue
		}
		require.NoError(t, gerr, key)
		require.Equal(t, want, got)
	}
	for _, key := range ackedBefore {
		got, err := b.Get(ctx, key)
		require.NoError(t, err, "%s was acknowledged before the backup began", key)
		require.Equal(t, dedupe.Completed, got.State)
	}
	// The copy is a store like any other.
	l, _, err := b.Claim(ctx, "after:backup", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, b.Complete(ctx, l, dedupe.Response{Status: 200}))
}

func TestBackupRefusesAnOccupiedDestination(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	l, _, err := s.Claim(ctx, "k:1", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))

	nonEmpty := t.TempDir()
	keep := filepath.Join(nonEmpty, "keep.txt")
	require.NoError(t, os.WriteFile(keep, []byte("mine"), 0o600))
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("mine"), 0o600))
	for _, dest := range []string{nonEmpty, file} {
		require.ErrorIs(t, s.Backup(dest), ErrBackupDest, dest)
	}
	got, err := os.ReadFile(keep)
	require.NoError(t, err)
	require.Equal(t, "mine", string(got), "nothing is overwritten")
	entries, err := os.ReadDir(nonEmpty)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// An existing empty directory is fine.
	empty := t.TempDir()
	require.NoError(t, s.Backup(empty))
	b := openTest(t, empty, newClock())
	rec, err := b.Get(ctx, "k:1")
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
}
