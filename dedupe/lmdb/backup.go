package lmdb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
)

// Backup writes a compacted, consistent copy of the store into the
// directory dest, which must not exist or be empty: dest/data.mdb holds
// every record as of one instant (one read transaction's snapshot), with
// free pages left out. Writers keep running meanwhile, in this process and
// in others; the snapshot pins the pages it reads until the copy is done.
//
// The copy is written to a temporary file, synced, then renamed into
// place, so dest/data.mdb only ever appears complete. A map resize in this
// process waits for the copy to finish.
func (s *Store) Backup(dest string) (err error) {
	created, err := prepareBackupDir(dest)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dest, DataFile+".partial")
	defer func() {
		if err != nil {
			os.Remove(tmp)
			if created {
				os.Remove(dest)
			}
		}
	}()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("dedupe: backup: %w", err)
	}
	defer f.Close()
	err = s.read(func() error {
		// A retry after MDB_MAP_RESIZED starts the copy afresh.
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return s.env.CopyFDFlag(f.Fd(), mdb.CopyCompact)
	})
	if err != nil {
		return fmt.Errorf("dedupe: backup: copy: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("dedupe: backup: sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("dedupe: backup: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dest, DataFile)); err != nil {
		return fmt.Errorf("dedupe: backup: %w", err)
	}
	return syncDir(dest)
}

// prepareBackupDir checks that dest is absent or an empty directory, and
// creates it when absent.
func prepareBackupDir(dest string) (created bool, err error) {
	fi, err := os.Stat(dest)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dest, 0o750); err != nil {
			return false, fmt.Errorf("dedupe: backup: %w", err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("dedupe: backup: %w", err)
	case !fi.IsDir():
		return false, fmt.Errorf("%w: %s is a file", ErrBackupDest, dest)
	}
	d, err := os.Open(dest)
	if err != nil {
		return false, fmt.Errorf("dedupe: backup: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("dedupe: backup: %w", err)
	}
	if len(names) > 0 {
		return false, fmt.Errorf("%w: %s is not empty", ErrBackupDest, dest)
	}
	return false, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("dedupe: backup: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("dedupe: backup: sync %s: %w", dir, err)
	}
	return nil
}

// ErrBackupDest means a backup's destination exists and is not an empty
// directory: a backup never overwrites anything.
var ErrBackupDest = errors.New("dedupe: backup destination exists and is not an empty directory")
