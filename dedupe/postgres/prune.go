package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// Prune deletes up to limit records whose ExpiresAt has passed and returns
// how many it deleted. Rows another node is pruning or claiming are
// skipped, not waited for.
func (s *Store) Prune(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+` WHERE key IN (
		SELECT key FROM `+s.table+` WHERE expires_at <= `+sqlNow+` ORDER BY expires_at LIMIT @limit FOR UPDATE SKIP LOCKED)`,
		pgx.NamedArgs{"now": s.clock(), "limit": limit})
	if err != nil {
		return 0, s.wrap("prune", err)
	}
	n := int(tag.RowsAffected())
	if n > 0 && s.opts.OnPrune != nil {
		s.opts.OnPrune(n)
	}
	return n, nil
}

func (s *Store) pruneLoop() {
	defer s.prunerWG.Done()
	dedupe.RunPruner(s.quit, s.opts.PruneInterval, func(ctx context.Context) {
		dedupe.PruneBatches(ctx, s.opts.Logger, func(ctx context.Context) (int, bool, error) {
			n, err := s.Prune(ctx, s.opts.PruneBatch)
			return n, n == s.opts.PruneBatch, err
		})
	})
}
