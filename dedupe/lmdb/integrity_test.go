package lmdb

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// seedSized writes n COMPLETED records with 1 KiB bodies into a new store
// in dir and closes it, so that data.mdb spans many pages.
func seedSized(t *testing.T, dir string, n int) {
	t.Helper()
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	for i := range n {
		l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%05d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: bytes.Repeat([]byte{'x'}, 1024)}))
	}
	require.NoError(t, s.Close())
}

// TestOpenRefusesADamagedDataFile: a store whose data.mdb was truncated,
// emptied, overwritten or removed is refused at Open, with one line naming
// the file and the way back (a backup). Before, a truncated file opened and
// the first read past its end was SIGBUS; an empty or missing one became a
// new store, and every acknowledged event was forwarded again.
func TestOpenRefusesADamagedDataFile(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string
	}{
		{"truncated to half", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, fi.Size()/2))
		}, "is truncated"},
		{"truncated to one page", func(t *testing.T, path string) {
			require.NoError(t, os.Truncate(path, 4096))
		}, "meta page 1 is cut short"},
		{"truncated to zero", func(t *testing.T, path string) {
			require.NoError(t, os.Truncate(path, 0))
		}, "is empty (0 bytes)"},
		{"zeroed", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, make([]byte, fi.Size()), 0o640))
		}, "is not a readable LMDB file"},
		{"missing, marker present", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
		}, "is missing, but this directory held a store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			seedSized(t, dir, 300)
			path := filepath.Join(dir, DataFile)
			tt.damage(t, path)
			before, _ := os.ReadFile(path)

			_, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
			require.ErrorIs(t, err, ErrDamaged)
			msg := err.Error()
			require.Contains(t, msg, tt.want)
			require.Contains(t, msg, path)
			require.Contains(t, msg, "webhookd backup")
			require.NotContains(t, msg, "\n")

			after, _ := os.ReadFile(path)
			require.Equal(t, before, after, "the damaged file is left as it was")
			_, err = OpenExisting(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
			require.Error(t, err, "webhookd keys refuses it too")
		})
	}
}

// TestMarkerSaysTheDirectoryHeldAStore: Open leaves the marker; a healthy
// store, a backup of it and a new directory all open; removing the marker
// with data.mdb starts afresh on purpose.
func TestMarkerSaysTheDirectoryHeldAStore(t *testing.T) {
	dir := t.TempDir()
	seedSized(t, dir, 300)
	_, err := os.Stat(filepath.Join(dir, markerFile))
	require.NoError(t, err, "Open wrote the marker")

	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err, "a healthy store opens")
	bk := filepath.Join(t.TempDir(), "bk")
	require.NoError(t, s.Backup(bk))
	require.NoError(t, s.Close())
	b, err := Open(bk, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err, "a compacted backup passes the size check")
	st, err := b.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 300, st[dedupe.Completed])
	require.NoError(t, b.Close())

	for _, f := range []string{DataFile, markerFile} {
		require.NoError(t, os.Remove(filepath.Join(dir, f)))
	}
	s, err = Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err, "no marker, no data: a new store")
	require.NoError(t, s.Close())
}

// TestFreePagesPastTheEndAreNotDamage: LMDB never writes a page that was
// allocated and freed in one transaction, so a healthy file may end before
// its last page when what lies past the end is free. Such a file opens,
// and every record in it reads back (a page in use past the end would be
// SIGBUS); one page fewer is refused.
func TestFreePagesPastTheEndAreNotDamage(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := openTest(t, dir, c, func(o *Options) { o.NoSync = true })
	for i := range 300 {
		l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_%05d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: bytes.Repeat([]byte{'x'}, 1024)}))
	}
	c.Advance(2 * time.Hour) // everything expires
	seedKeys(t, s, "stripe:keep_1", "stripe:keep_2")
	for {
		n, err := s.Prune(ctx, 50)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.NoError(t, s.Close())

	path := filepath.Join(dir, DataFile)
	meta, size, err := readMeta(path)
	require.NoError(t, err)
	ps := int64(meta.PageSize)
	require.Equal(t, int64(meta.LastPage+1)*ps, size)
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	pages := size / ps
	for pages > 2 {
		require.NoError(t, os.WriteFile(path, orig[:(pages-1)*ps], 0o640))
		if _, err := verifyFile(dir); err != nil {
			require.ErrorIs(t, err, ErrDamaged)
			require.Contains(t, err.Error(), "is truncated")
			break
		}
		pages--
	}
	require.Less(t, pages, size/ps, "the pruned pages at the end are free")
	t.Logf("%d of %d pages kept", pages, size/ps)
	require.NoError(t, os.WriteFile(path, orig[:pages*ps], 0o640))

	s, err = Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err)
	recs, err := s.List(ctx, dedupe.ListOptions{})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	seedKeys(t, s, "stripe:after") // LMDB writes reused pages back past the end
	require.NoError(t, s.Close())
	r, err := Check(dir)
	require.NoError(t, err)
	require.False(t, r.Damaged(), "%+v", r.Damage)
	require.Equal(t, 3, r.Records)
}
