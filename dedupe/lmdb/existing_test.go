package lmdb

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestOpenExistingCreatesNothing(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "missing")
	_, err := OpenExisting(missing, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.ErrorIs(t, err, ErrNoStore)
	_, statErr := os.Stat(missing)
	require.ErrorIs(t, statErr, os.ErrNotExist, "the directory was not created")

	empty := filepath.Join(root, "empty")
	require.NoError(t, os.Mkdir(empty, 0o750))
	_, err = OpenExisting(empty, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.ErrorIs(t, err, ErrNoStore)
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries, "no store was created in it")

	file := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = OpenExisting(file, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.ErrorIs(t, err, ErrNoStore)

	s, err := Open(filepath.Join(root, "store"), Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = OpenExisting(filepath.Join(root, "store"), Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// A directory that held a store (its marker is there) but has lost
// data.mdb is damaged, as Open and Check say, not "no store": keys must
// not tell the operator there is nothing to restore.
func TestOpenExistingCallsAMissingDataFileDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, os.Remove(filepath.Join(dir, DataFile)))

	_, err = OpenExisting(dir, Options{Options: dedupe.Options{PruneInterval: -1}})
	require.ErrorIs(t, err, ErrDamaged)
	require.NotErrorIs(t, err, ErrNoStore)
	_, err = Check(dir)
	require.ErrorIs(t, err, ErrDamaged, "as check says")
}
