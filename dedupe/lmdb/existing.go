package lmdb

import (
	"errors"
	"fmt"
	"os"
)

// ErrNoStore is returned by OpenExisting when the directory holds no store.
var ErrNoStore = errors.New("dedupe: no store")

// DataFile is the file LMDB keeps an environment's data in, inside the
// store's directory. A backup directory holds one too, so that Open (and
// webhookd, with its data directory pointing at it) opens the copy as it is.
const DataFile = "data.mdb"

// OpenExisting opens the store in dir as Open does, but creates nothing:
// when dir, or the store in it, does not exist it fails with an error that
// wraps ErrNoStore, and when dir held a store that has lost its data file,
// with one that wraps ErrDamaged, as Open does. Tools that inspect the store a server writes (webhookd
// keys) use it, because quietly creating an empty store at a mistyped path
// would hide the mistake: every key would look unknown.
func OpenExisting(dir string, opts Options) (*Store, error) {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoStore, dir)
	case err != nil:
		return nil, fmt.Errorf("dedupe: %w", err)
	case !info.IsDir():
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNoStore, dir)
	}
	// As Open and Check do: a missing data file where the marker says a
	// store was is damage (ErrDamaged), to restore from a backup.
	exists, err := verifyFile(dir)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("%w: %s holds no store (%s is missing)", ErrNoStore, dir, DataFile)
	}
	return Open(dir, opts)
}
