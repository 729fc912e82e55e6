package dedupe

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// RunPruner calls pass every interval until quit is closed. The context
// pass gets is cancelled by quit, so Close never waits for a long pass.
// Every backend prunes this way; only what one pass does differs.
func RunPruner(quit <-chan struct{}, interval time.Duration, pass func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		}
		pass(ctx)
	}
}

// PruneBatches deletes every expired record in bounded batches, one batch per
// call of batch, which reports how many it deleted and whether expired
// records may remain. Between batches the store serves deliveries.
func PruneBatches(ctx context.Context, log *slog.Logger, batch func(context.Context) (int, bool, error)) {
	total := 0
	for {
		n, more, err := batch(ctx)
		total += n
		if err != nil {
			if !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
				log.Warn("dedupe: pruning expired records failed; will retry", "error", err.Error(), "deleted", total)
			}
			return
		}
		if !more {
			break
		}
	}
	if total > 0 {
		log.Debug("dedupe: pruned expired records", "deleted", total)
	}
}
