package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres"
)

const backupUsage = `usage: webhookd backup DEST

Writes a compacted, consistent copy of the dedupe store in WEBHOOKD_DATA_DIR
to DEST/` + lmdb.DataFile + `, also while webhookd serve is running on it. DEST must not
exist or be an empty directory. To restore, stop webhookd and point
WEBHOOKD_DATA_DIR at DEST (or copy DEST/` + lmdb.DataFile + ` into the data directory).
`

// runBackup implements `webhookd backup DEST`.
func runBackup(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd backup", "", stderr)
	fs.Usage = func() { fmt.Fprint(stderr, backupUsage) }
	rest, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 || rest[0] == "" {
		fs.Usage()
		return 2
	}
	dest := rest[0]
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	if cfg.Store != "lmdb" {
		// The records that matter are in the shared database; a tiered
		// node's LMDB only caches finished ones.
		fmt.Fprintf(stderr, "webhookd backup: backs up the lmdb store only; with %s_STORE=%s the records are in Postgres: back them up with pg_dump (table %s)\n",
			envPrefix, cfg.Store, postgres.Table)
		return 1
	}
	// Open would create an empty store; a backup of nothing is a mistake.
	if _, err := os.Stat(filepath.Join(cfg.DataDir, lmdb.DataFile)); err != nil {
		fmt.Fprintf(stderr, "webhookd backup: no store in WEBHOOKD_DATA_DIR=%s: %v\n", cfg.DataDir, err)
		return 1
	}
	if same, err := sameDir(cfg.DataDir, dest); err != nil {
		fmt.Fprintf(stderr, "webhookd backup: %v\n", err)
		return 1
	} else if same {
		fmt.Fprintf(stderr, "webhookd backup: DEST %s is the data directory itself\n", dest)
		return 1
	}
	opts := storeOptions(cfg, newLogger(cfg, stderr))
	opts.PruneInterval = -1 // the serving process prunes; a backup only reads
	store, err := lmdb.Open(cfg.DataDir, opts)
	if err != nil {
		fmt.Fprintf(stderr, "webhookd backup: %v\n", err)
		return 1
	}
	defer store.Close()
	start := time.Now()
	if err := store.Backup(dest); err != nil {
		fmt.Fprintf(stderr, "webhookd backup: %v\n", err)
		return 1
	}
	size := int64(-1)
	if fi, err := os.Stat(filepath.Join(dest, lmdb.DataFile)); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, %s)\n",
		cfg.DataDir, filepath.Join(dest, lmdb.DataFile), size, time.Since(start).Round(time.Millisecond))
	return 0
}

// sameDir reports whether a and b name the same directory; b may not exist.
func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}
