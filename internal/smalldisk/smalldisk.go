// Package smalldisk gives tests a really small file system, to see what a
// full disk does to the code under test: a tmpfs of a few MiB mounted on a
// temporary directory. Mounting needs root (or CAP_SYS_ADMIN); where it is
// not permitted the test is skipped with a message saying so.
//
// It is for tests only and must never be imported by webhookd's binary.
package smalldisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a fresh directory and returns it.
// The file system is unmounted when the test ends: register cleanups that
// must run while it is mounted (closing a store on it) after calling Mount.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs to fill up (%v): run the tests as root to check the full-disk behaviour", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Resize changes the size of the tmpfs mounted on dir, as when an operator
// frees space or grows the volume.
func Resize(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("resize tmpfs %s: %v", dir, err)
	}
}

// Fill writes a ballast file in dir until the file system is full, and
// returns its path: removing it gives the space back.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatalf("fill %s: %v", dir, err)
		}
	}
}
