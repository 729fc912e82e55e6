package lmdb

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// damageValueLength rewrites, in the data file of the closed store in dir,
// the value length of key's node in the records B-tree to 0xFFFFFFFF, as a
// flipped length on disk would: LMDB trusts node lengths, and lmdb-go
// panics ("gobytes: length out of range") when it copies such a value.
//
// A leaf node is mn_lo, mn_hi (the value length, low and high 16 bits),
// mn_flags, mn_ksize, then the key (LMDB's mdb.c, MDB_node). The expiry
// index holds the key too, after its 8-byte time; only a node whose
// mn_ksize is the key's length and whose flags are 0 is the record's.
func damageValueLength(t *testing.T, dir, key string) {
	t.Helper()
	editRecordNode(t, dir, key, func(node []byte) { copy(node[:4], []byte{0xff, 0xff, 0xff, 0xff}) })
}

// flipValueByte sets byte off of key's value in the data file of the closed
// store in dir to b, as a bit flip on disk would.
func flipValueByte(t *testing.T, dir, key string, off int, b byte) {
	t.Helper()
	editRecordNode(t, dir, key, func(node []byte) { node[8+len(key)+off] = b })
}

// editRecordNode calls edit with every copy of key's node in the records
// B-tree (header, key, value) in the data file of the closed store in dir.
// A copy is taken only where its page holds it among its nodes (at or
// above the page header's mp_upper): LMDB does not clear a page it
// reuses, and an old node left in the free space of a page now of another
// tree (the creation-time index's, say) may have that tree's nodes
// written over its tail, which an edit would damage instead.
func editRecordNode(t *testing.T, dir, key string, edit func(node []byte)) {
	t.Helper()
	path := filepath.Join(dir, DataFile)
	meta, _, err := readMeta(path)
	require.NoError(t, err)
	ps := int(meta.PageSize)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := 0
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(key))
		if i < 0 {
			break
		}
		i += off
		off = i + 1
		if i < 8 || binary.LittleEndian.Uint16(b[i-2:]) != uint16(len(key)) || binary.LittleEndian.Uint16(b[i-4:]) != 0 {
			continue
		}
		// The page header is mp_pgno (8 bytes), mp_pad, mp_flags,
		// mp_lower, mp_upper (mdb.c, MDB_page).
		page := (i - 8) / ps * ps
		if upper := int(binary.LittleEndian.Uint16(b[page+14:])); i-8-page < upper {
			continue
		}
		edit(b[i-8:])
		n++
	}
	require.NotZero(t, n, "no node of %s in %s", key, path)
	require.NoError(t, os.WriteFile(path, b, 0o640))
}

// seedKeys writes a COMPLETED record for each key.
func seedKeys(t *testing.T, s *Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		l, _, err := s.Claim(ctx, k, "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: []byte("ok")}))
	}
}

// closesPromptly fails the test unless s.Close returns within a second.
func closesPromptly(t *testing.T, s *Store) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Second):
		t.Fatal("Close blocks: a lock of the store was not released")
	}
}

// TestUnreadableRecordIsAnErrorNotAPanic: a record whose length on disk is
// damaged makes lmdb-go panic inside the transaction. Every read and write
// that meets it answers ErrCorrupt naming the key, the rest of the store is
// served, and Close still returns (the panic must not leak Store.mu).
func TestUnreadableRecordIsAnErrorNotAPanic(t *testing.T) {
	const bad, good = "stripe:evt_damaged", "stripe:evt_fine"
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string, s *Store) *Store // returns the open store
	}{
		{"value that does not decode", func(t *testing.T, dir string, s *Store) *Store {
			corrupt(t, s, bad)
			return s
		}},
		{"value length out of range on disk", func(t *testing.T, dir string, s *Store) *Store {
			require.NoError(t, s.Close())
			damageValueLength(t, dir, bad)
			return openTest(t, dir, newClock())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, newClock())
			seedKeys(t, s, bad, good)
			s = tt.damage(t, dir, s)

			_, err := s.Get(ctx, bad)
			require.ErrorIs(t, err, dedupe.ErrCorrupt)
			require.Contains(t, err.Error(), bad)
			_, _, err = s.Claim(ctx, bad, "fp", nil)
			require.ErrorIs(t, err, dedupe.ErrCorrupt)
			_, err = s.List(ctx, dedupe.ListOptions{})
			require.ErrorIs(t, err, dedupe.ErrCorrupt)
			require.ErrorIs(t, s.Delete(ctx, bad), dedupe.ErrCorrupt, "a write op that meets it")
			require.ErrorIs(t, s.Complete(ctx, dedupe.Lease{Key: bad, Token: 1}, dedupe.Response{Status: 200}), dedupe.ErrCorrupt)

			rec, err := s.Get(ctx, good)
			require.NoError(t, err, "the rest of the store is served")
			require.Equal(t, dedupe.Completed, rec.State)
			_, err = s.List(ctx, dedupe.ListOptions{Prefix: "stripe:evt_f"})
			require.NoError(t, err)
			require.NoError(t, s.Ping(ctx))
			closesPromptly(t, s)
		})
	}
}

// damageIndexValueLength sets the value length of key's expiry index entry,
// in the data file of the closed store in dir, out of range. The entry's key
// is the 8-byte expiry time, then key.
func damageIndexValueLength(t *testing.T, dir, key string) {
	t.Helper()
	path := filepath.Join(dir, DataFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := 0
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(key))
		if i < 0 {
			break
		}
		i += off
		off = i + 1
		h := i - 8 - 8 // node header, then the time, then key
		if h < 0 || binary.LittleEndian.Uint16(b[h+6:]) != uint16(len(key)+8) || binary.LittleEndian.Uint16(b[h+4:]) != 0 {
			continue
		}
		copy(b[h:h+4], []byte{0xff, 0xff, 0xff, 0xff})
		n++
	}
	require.NotZero(t, n, "no index entry of %s in %s", key, path)
	require.NoError(t, os.WriteFile(path, b, 0o640))
}

// TestPruneMeetsAnUnreadableIndexEntry: the pruner reads the expiry index
// in the writer's goroutine, where a panic would end the process. A damaged
// entry is ErrCorrupt for that pruning transaction, and the store goes on.
func TestPruneMeetsAnUnreadableIndexEntry(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := openTest(t, dir, c)
	seedKeys(t, s, "stripe:evt_indexed")
	require.NoError(t, s.Close())
	damageIndexValueLength(t, dir, "stripe:evt_indexed")
	s = openTest(t, dir, c)
	c.Advance(2 * time.Hour) // past the record's retention

	_, err := s.Prune(ctx, 10)
	require.ErrorIs(t, err, dedupe.ErrCorrupt)
	_, _, err = s.Claim(ctx, "stripe:evt_new", "fp", nil)
	require.NoError(t, err, "the writer still runs")
	closesPromptly(t, s)
}
