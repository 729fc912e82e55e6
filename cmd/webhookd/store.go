package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// dedupeStore is what serve, keys and metrics need of a dedupe store;
// *dedupe.Store (lmdb), *dedupe.PGStore (postgres) and *dedupe.Tiered
// (tiered) all have it.
type dedupeStore interface {
	Claim(ctx context.Context, key, fingerprint string) (dedupe.Lease, *dedupe.Record, error)
	Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error
	Fail(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error
	Release(ctx context.Context, l dedupe.Lease) error
	Get(ctx context.Context, key string) (dedupe.Record, error)
	Delete(ctx context.Context, key string) error
	ForceDelete(ctx context.Context, key string) error
	List(ctx context.Context, o dedupe.ListOptions) ([]dedupe.Record, error)
	Stats(ctx context.Context) (map[dedupe.State]int, error)
	Ping(ctx context.Context) error
	Close() error
}

// storeOptions are the dedupe options every subcommand that opens the
// store uses.
func storeOptions(cfg *config, log *slog.Logger) dedupe.Options {
	return dedupe.Options{
		Lease:         cfg.Lease,
		Retention:     cfg.Retention,
		MapSize:       cfg.MapSize,
		MaxMapSize:    cfg.MaxMapSize,
		MaxReaders:    cfg.MaxReaders,
		PruneInterval: cfg.PruneInterval,
		Logger:        log,
	}
}

// postgresOpenTimeout bounds connecting to Postgres and creating its table
// at start-up.
const postgresOpenTimeout = 30 * time.Second

// openStore opens the store WEBHOOKD_STORE names. openLocal opens the LMDB
// store at WEBHOOKD_DATA_DIR (serve creates it, keys requires it).
func openStore(ctx context.Context, cfg *config, opts dedupe.Options, openLocal func(string, dedupe.Options) (*dedupe.Store, error)) (dedupeStore, error) {
	openLMDB := func() (*dedupe.Store, error) {
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
	shared, err := dedupe.OpenPostgres(ctx, cfg.PostgresDSN, dedupe.PostgresOptions{Options: opts, OpTimeout: cfg.StoreTimeout})
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
	return dedupe.NewTiered(local, shared), nil
}
