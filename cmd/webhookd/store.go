package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/tiered"
)

// storeOptions are the dedupe options every subcommand that opens the
// store uses.
func storeOptions(cfg *config, log *slog.Logger) lmdb.Options {
	return lmdb.Options{
		Options: dedupe.Options{
			Lease:         cfg.Lease,
			Retention:     cfg.Retention,
			PruneInterval: cfg.PruneInterval,
			Logger:        log,
		},
		MapSize:    cfg.MapSize,
		MaxMapSize: cfg.MaxMapSize,
		MaxReaders: cfg.MaxReaders,
	}
}

// postgresOpenTimeout bounds connecting to Postgres and creating its table
// at start-up.
const postgresOpenTimeout = 30 * time.Second

// openStore opens the store WEBHOOKD_STORE names. openLocal opens the LMDB
// store at WEBHOOKD_DATA_DIR (serve creates it, keys requires it); Postgres
// gets the options every backend shares (opts.Options).
func openStore(ctx context.Context, cfg *config, opts lmdb.Options, openLocal func(string, lmdb.Options) (*lmdb.Store, error)) (dedupe.Store, error) {
	openLMDB := func() (*lmdb.Store, error) {
		s, err := openLocal(cfg.DataDir, opts)
		if err != nil {
			return nil, fmt.Errorf("%s_DATA_DIR=%s: %w", envPrefix, cfg.DataDir, err)
		}
		return s, nil
	}
	if cfg.Store == "lmdb" {
		return openLMDB()
	}
	ctx, cancel := context.WithTimeout(ctx, postgresOpenTimeout)
	defer cancel()
	popts := postgres.Options{Options: opts.Options, OpTimeout: cfg.StoreTimeout}
	if cfg.Store == "postgres" {
		// The Postgres writer's batches are the node's commits.
		popts.OnCommit = opts.OnCommit
	}
	shared, err := postgres.Open(ctx, cfg.PostgresDSN, popts)
	if err != nil {
		return nil, fmt.Errorf("%s_POSTGRES_DSN: %w", envPrefix, err)
	}
	if cfg.Store == "postgres" {
		return shared, nil
	}
	// Tiered: the node's metrics describe the shared store, as Stats does,
	// so only Postgres's pruner counts into OnPrune (the local pruner only
	// drops copies of records Postgres prunes too, and counting both would
	// count each record twice). OnCommit stays with the local store: the
	// LMDB writer is the only store that calls it.
	localOpts := opts
	localOpts.OnPrune = nil
	local, err := openLocal(cfg.DataDir, localOpts)
	if err != nil {
		shared.Close()
		return nil, fmt.Errorf("%s_DATA_DIR=%s: %w", envPrefix, cfg.DataDir, err)
	}
	return tiered.New(local, shared), nil
}
