package main

import (
	"log/slog"

	"github.com/webhookd/webhookd/dedupe"
)

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
