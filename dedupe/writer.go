package dedupe

// Group commit.
//
// Every write (claim, complete, fail, release, delete, prune) is an op sent
// to one writer goroutine, which owns the only LMDB write transaction of
// this process and runs on a locked OS thread as LMDB requires. The writer
// blocks until an op arrives, then takes every op already waiting (up to
// Options.MaxBatch) and runs them all in one write transaction, each inside
// its own nested transaction (txn.Sub): an op that fails is rolled back
// alone and the others still commit. Only after the commit has been synced
// to disk does any caller hear back, so an answered write is a durable
// write.
//
// There is no timer: an idle writer commits the first op at once, so one
// caller sees the latency of a single commit, and under load the batch size
// grows by itself with the number of callers waiting while the previous
// commit was syncing. That is what turns N fsyncs into one.
//
// An op's function may run more than once: when LMDB reports the map full,
// the whole transaction is aborted, the map is grown, and the batch is run
// again from the start. Op functions therefore only read and write through
// the transaction they are given and set their results afresh on each run.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/PowerDNS/lmdb-go/lmdb"
)

type op struct {
	fn   lmdb.TxnOp
	err  error
	done chan error
}

// write hands fn to the writer and waits for the commit that holds it. Once
// queued, an op is always waited for: abandoning it on ctx cancellation
// could leave the caller ignorant of a claim it made.
func (s *Store) write(ctx context.Context, fn lmdb.TxnOp) error {
	o := &op{fn: fn, done: make(chan error, 1)}
	select {
	case s.ops <- o:
	case <-s.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-o.done
}

func (s *Store) writeLoop() {
	defer s.writerWG.Done()
	// LMDB write transactions are tied to the thread that began them.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	batch := make([]*op, 0, s.opts.MaxBatch)
	for {
		select {
		case o := <-s.ops:
			batch = append(batch[:0], o)
		case <-s.quit:
			return
		}
	drain:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		start := time.Now()
		s.commit(batch)
		if s.opts.OnCommit != nil {
			s.opts.OnCommit(len(batch), time.Since(start))
		}
		for i, o := range batch {
			o.done <- o.err
			batch[i] = nil
		}
	}
}

// commit runs batch in one durable transaction, growing the map and
// retrying when it is full.
func (s *Store) commit(batch []*op) {
	for {
		err := s.runBatch(batch)
		if err == nil {
			return
		}
		if lmdb.IsMapFull(err) {
			if gerr := s.growMap(); gerr == nil {
				continue
			} else {
				err = gerr
			}
		} else if lmdb.IsMapResized(err) {
			if aerr := s.adoptMapSize(); aerr == nil {
				continue
			}
		}
		// The transaction was aborted: nothing in it happened.
		for _, o := range batch {
			o.err = fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return
	}
}

func (s *Store) runBatch(batch []*op) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.env.UpdateLocked(func(txn *lmdb.Txn) error {
		for _, o := range batch {
			o.err = txn.Sub(o.fn)
			if lmdb.IsMapFull(o.err) {
				return o.err
			}
			if o.err != nil && !isLogical(o.err) {
				// An LMDB or I/O error inside one op: that op alone is
				// rolled back by Sub, and reports the store unavailable.
				o.err = fmt.Errorf("%w: %v", ErrUnavailable, o.err)
			}
		}
		return nil
	})
}

// isLogical reports whether err is one of this package's outcomes rather
// than a storage failure.
func isLogical(err error) bool {
	for _, e := range []error{ErrInFlight, ErrFingerprintMismatch, ErrLeaseLost, ErrNotFound, ErrInvalidKey, ErrCorrupt} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// growMap doubles the map size. LMDB allows it only while this process has
// no transaction open, hence the exclusive lock: readers wait a moment, none
// is cut off.
func (s *Store) growMap() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	next := s.mapSize * 2
	if next > s.opts.MaxMapSize {
		next = s.opts.MaxMapSize
	}
	if next <= s.mapSize {
		return fmt.Errorf("map full at its maximum size of %d bytes (WEBHOOKD_MAX_MAP_SIZE)", s.mapSize)
	}
	if err := s.env.SetMapSize(next); err != nil {
		return fmt.Errorf("grow map to %d bytes: %w", next, err)
	}
	s.mapSize = next
	return nil
}

// MapSize returns the current map size in bytes.
func (s *Store) MapSize() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mapSize
}

// Prune deletes up to limit records whose ExpiresAt has passed, with their
// index entries, in one write, and returns how many it deleted.
func (s *Store) Prune(ctx context.Context, limit int) (int, error) {
	var n int
	err := s.write(ctx, func(txn *lmdb.Txn) error {
		n = 0
		now := s.opts.Now()
		cur, err := txn.OpenCursor(s.expiry)
		if err != nil {
			return err
		}
		defer cur.Close()
		for n < limit {
			k, _, err := cur.Get(nil, nil, lmdb.First)
			if lmdb.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			at, key, ok := splitExpiryKey(k)
			if ok && at.After(now) {
				return nil
			}
			if err := cur.Del(0); err != nil {
				return err
			}
			if !ok {
				continue
			}
			// Every transition moves the index entry with the record, so a
			// mismatch means an entry from an older layout or a bug; the
			// record's own expiry decides, never the entry alone.
			rec, err := s.get(txn, key)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if rec.ExpiresAt.After(now) {
				continue
			}
			if err := txn.Del(s.records, []byte(key), nil); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err == nil && n > 0 && s.opts.OnPrune != nil {
		s.opts.OnPrune(n)
	}
	return n, err
}

func (s *Store) pruneLoop() {
	defer s.prunerWG.Done()
	t := time.NewTicker(s.opts.PruneInterval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.quit
		cancel()
	}()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		// Bounded batches: other writes interleave between them.
		for {
			n, err := s.Prune(ctx, s.opts.PruneBatch)
			if err != nil || n < s.opts.PruneBatch {
				break
			}
		}
	}
}
