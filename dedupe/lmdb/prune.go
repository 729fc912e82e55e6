package lmdb

import (
	"context"
	"errors"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// Prune deletes up to limit records whose ExpiresAt has passed, with their
// index entries, in one write, and returns how many it deleted. It walks
// the expiry index from its oldest entry and stops at the first that lies
// in the future, so its cost is that of the records it deletes, not of the
// store's size.
func (s *Store) Prune(ctx context.Context, limit int) (int, error) {
	n, _, err := s.prune(ctx, limit)
	return n, err
}

// prune is Prune that also says whether expired entries may remain: it
// examines at most limit index entries, deleted or not, so that a run of
// stale entries cannot make one transaction unbounded.
func (s *Store) prune(ctx context.Context, limit int) (int, bool, error) {
	if limit <= 0 {
		return 0, false, nil
	}
	// The op's own results, not prune's named ones: returning writes
	// those, and the op may still be running (see below).
	var (
		deleted int
		more    bool
	)
	// Through update, as every other op: a damaged index entry panics in
	// lmdb-go, and a panic in the writer goroutine would end the process.
	err := s.update(ctx, func(txn *mdb.Txn) (err error) {
		deleted, more = 0, false
		// A record that does not decode cannot say what it was counted
		// as: the counts are walked afresh once, after the batch.
		recount := false
		defer func() {
			if recount && err == nil {
				err = s.recount(txn)
			}
		}()
		now := s.opts.Now()
		cur, err := txn.OpenCursor(s.expiry)
		if err != nil {
			return err
		}
		defer cur.Close()
		for examined := 0; ; examined++ {
			k, _, err := cur.Get(nil, nil, mdb.First)
			if mdb.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			at, key, ok := splitExpiryKey(k)
			if ok && at.After(now) {
				return nil
			}
			if examined == limit {
				more = true
				return nil
			}
			if err := s.delCur(cur); err != nil {
				return err
			}
			if !ok {
				continue
			}
			// Every transition moves the index entry with the record, so a
			// mismatch means an entry from an older layout or a bug; the
			// record's own expiry decides, never the entry alone.
			rec, err := s.get(txn, key, noBodies)
			if errors.Is(err, dedupe.ErrNotFound) {
				continue
			}
			if errors.Is(err, dedupe.ErrCorrupt) {
				// A record this binary cannot read (on-disk damage, or a
				// newer layout after a rollback) whose index entry says it
				// expired: drop it, or it would stop every later pass here.
				s.logger.Warn("pruned a record that does not decode", "key", key)
				if err := s.delKV(txn, s.records, []byte(key)); err != nil {
					return err
				}
				recount = true
				deleted++
				continue
			}
			if err != nil {
				return err
			}
			if rec.ExpiresAt.After(now) {
				// Keep the record findable by the pruner: no record may
				// outlive its expiry for want of an index entry.
				if err := s.putKV(txn, s.expiry, expiryKey(nil, rec.ExpiresAt, rec.Key), nil); err != nil {
					return err
				}
				continue
			}
			if err := s.count(txn, rec.State, -1); err != nil {
				return err
			}
			if err := s.uncreate(txn, &rec); err != nil {
				return err
			}
			if err := s.unqueue(txn, &rec); err != nil {
				return err
			}
			if err := s.delKV(txn, s.records, []byte(key)); err != nil {
				return err
			}
			deleted++
		}
	})
	if err != nil {
		// A caller that gave up (its ctx ended, as Close ends the
		// pruner's) may hear back while the op still runs in the writer
		// (write): deleted and more are the op's until it has answered.
		return 0, false, err
	}
	if deleted > 0 && s.opts.OnPrune != nil {
		s.opts.OnPrune(deleted)
	}
	return deleted, more, nil
}

func (s *Store) pruneLoop() {
	defer s.prunerWG.Done()
	dedupe.RunPruner(s.quit, s.opts.PruneInterval, func(ctx context.Context) {
		s.pruneAll(ctx)
		s.clearStaleReaders()
	})
}

// pruneAll deletes every expired record, in bounded batches: each is one
// op among the others in the writer's queue, so deliveries keep being
// served between them.
func (s *Store) pruneAll(ctx context.Context) {
	dedupe.PruneBatches(ctx, s.logger, func(ctx context.Context) (int, bool, error) {
		return s.prune(ctx, s.opts.PruneBatch)
	})
}

// clearStaleReaders frees the reader slots of processes that died inside a
// read transaction (a killed webhookd keys, say). Open does it too, but a
// long-running server must not wait for its own restart: a stale slot pins
// the pages of its snapshot and stops their reuse, so the file grows.
func (s *Store) clearStaleReaders() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	n, err := s.env.ReaderCheck()
	if err != nil {
		s.logger.Warn("dedupe: reader check failed", "error", err.Error())
		return
	}
	if n > 0 {
		s.logger.Info("dedupe: cleared reader slots left by dead processes", "slots", n)
	}
}
