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
// commit was syncing. That is what turns N fsyncs into one. One refinement
// keeps batches from splitting into two cohorts that take turns (those
// answered by the last commit, and those that queued during it): after a
// commit of more than one op, the writer yields the processor
// (runtime.Gosched, not a sleep) for as long as answered callers keep
// queueing new ops, up to the size of the batch just committed. When nobody
// comes back, it stops at the first yield.
//
// A commit that fails (disk full, I/O error) aborts the whole transaction:
// every op in the batch is answered ErrUnavailable and none of them took
// effect. An op that fails on its own (a logical outcome such as
// ErrLeaseLost, or a storage error raised inside it) is rolled back alone
// by its nested transaction.
//
// An op's function may run more than once: when LMDB reports the map full,
// the whole transaction is aborted, the map is grown, and the batch is run
// again from the start. Op functions therefore only read and write through
// the transaction they are given and set their results afresh on each run.
//
// A caller waits for its answer only until its context ends (write): an op
// whose caller has gone by the time the writer runs it is skipped, and one
// caught in a commit that does not return (a stuck fsync) takes effect, or
// not, with that commit, whoever still waits for it.
//
// Readers never wait for the writer: they run in their own read
// transactions on the last committed state. They do wait, shortly, while
// the map is grown (Store.mu).

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/PowerDNS/lmdb-go/lmdb"
)

type op struct {
	ctx  context.Context
	fn   lmdb.TxnOp
	err  error
	done chan error // buffered: the writer never waits for a caller
}

// write hands fn to the writer and waits for the commit that holds it, or
// for ctx to end, whichever comes first: a disk whose fsync never returns
// must not hold every caller forever. A caller that gives up is answered
// ctx's error, and its op:
//   - if the writer has not received it, never runs;
//   - if the writer receives it after ctx ended, is skipped (runBatch);
//   - if it is already in the commit under way, takes effect with that
//     commit, unknown to its caller. A claim made so is held by nobody and
//     expires with its lease, as one left by a crash does; a complete,
//     fail or release that lands late records what its caller meant.
func (s *Store) write(ctx context.Context, fn lmdb.TxnOp) error {
	o := &op{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.queued.Add(1) // the writer takes it off when it receives o
	select {
	case s.ops <- o:
	case <-s.quit:
		s.queued.Add(-1)
		return ErrClosed
	case <-ctx.Done():
		s.queued.Add(-1)
		return ctx.Err()
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		select {
		case err := <-o.done: // answered at the same moment: that stands
			return err
		default:
		}
		return fmt.Errorf("dedupe: gave up waiting for the commit (the write may still take effect): %w", ctx.Err())
	}
}

func (s *Store) writeLoop() {
	defer s.writerWG.Done()
	// LMDB write transactions are tied to the thread that began them.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	batch := make([]*op, 0, s.opts.MaxBatch)
	for {
		s.gather(len(batch))
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
		s.queued.Add(-int64(len(batch)))
		start := time.Now()
		s.commit(batch)
		if s.opts.OnCommit != nil {
			s.opts.OnCommit(len(batch), time.Since(start))
		}
		s.commits.Add(1)
		s.writes.Add(uint64(len(batch)))
		// Answer only now: the commit that holds every op is on disk, or
		// failed and took none of them.
		for _, o := range batch {
			o.done <- o.err
		}
		clear(batch)
	}
}

// gather lets callers answered by the last commit (of last ops) queue
// their next op before the writer takes the next batch, so that under load
// one commit serves them all. It yields while the queue keeps growing and
// returns at once when it does not; it never sleeps.
func (s *Store) gather(last int) {
	if last < 2 {
		return
	}
	for q := s.queued.Load(); q < int64(last); {
		runtime.Gosched()
		n := s.queued.Load()
		if n <= q {
			return
		}
		q = n
	}
}

// commit runs batch in one durable transaction, growing the map and
// retrying when it is full. On return every op's err is its answer.
func (s *Store) commit(batch []*op) {
	for {
		err := s.runBatch(batch)
		if err == nil {
			return
		}
		if isErrno(err, lmdb.MapFull) {
			gerr := s.growMap()
			if gerr == nil {
				continue
			}
			err = gerr
		} else if isErrno(err, lmdb.MapResized) {
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
			if err := o.ctx.Err(); err != nil {
				// Its caller has given up (or is about to): a write
				// nobody waits for must not be made.
				o.err = err
				continue
			}
			o.err = txn.Sub(o.fn)
			if isErrno(o.err, lmdb.MapFull) {
				return o.err
			}
			if o.err != nil && !isLogical(o.err) {
				// An LMDB or I/O error inside one op: that op alone is
				// rolled back by Sub, and reports the store unavailable.
				o.err = fmt.Errorf("%w: %v", ErrUnavailable, o.err)
			}
		}
		if hook := s.commitHook.Load(); hook != nil {
			return (*hook)()
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

// isErrno is lmdb.IsErrno that also sees through wrapping.
func isErrno(err error, errno lmdb.Errno) bool {
	if err == nil {
		return false
	}
	var oe *lmdb.OpError
	if errors.As(err, &oe) {
		return oe.Errno == errno
	}
	return lmdb.IsErrno(err, errno)
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
		return fmt.Errorf("map full at its maximum size of %d bytes (Options.MaxMapSize)", s.mapSize)
	}
	if err := s.env.SetMapSize(next); err != nil {
		return fmt.Errorf("grow map to %d bytes: %w", next, err)
	}
	s.mapSize = next
	s.logger.Info("dedupe: map grown", "map_size", next)
	return nil
}

// MapSize returns the current map size in bytes.
func (s *Store) MapSize() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mapSize
}

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
func (s *Store) prune(ctx context.Context, limit int) (deleted int, more bool, err error) {
	if limit <= 0 {
		return 0, false, nil
	}
	err = s.write(ctx, func(txn *lmdb.Txn) error {
		deleted, more = 0, false
		now := s.opts.Now()
		cur, err := txn.OpenCursor(s.expiry)
		if err != nil {
			return err
		}
		defer cur.Close()
		for examined := 0; ; examined++ {
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
			if examined == limit {
				more = true
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
			if errors.Is(err, ErrCorrupt) {
				// A record this binary cannot read (on-disk damage, or a
				// newer layout after a rollback) whose index entry says it
				// expired: drop it, or it would stop every later pass here.
				s.logger.Warn("pruned a record that does not decode", "key", key)
				if err := txn.Del(s.records, []byte(key), nil); err != nil {
					return err
				}
				deleted++
				continue
			}
			if err != nil {
				return err
			}
			if rec.ExpiresAt.After(now) {
				// Keep the record findable by the pruner: no record may
				// outlive its expiry for want of an index entry.
				if err := txn.Put(s.expiry, expiryKey(nil, rec.ExpiresAt, rec.Key), nil, 0); err != nil {
					return err
				}
				continue
			}
			if err := txn.Del(s.records, []byte(key), nil); err != nil {
				return err
			}
			deleted++
		}
	})
	if err == nil && deleted > 0 && s.opts.OnPrune != nil {
		s.opts.OnPrune(deleted)
	}
	return deleted, more, err
}

func (s *Store) pruneLoop() {
	defer s.prunerWG.Done()
	runPruner(s.quit, s.opts.PruneInterval, func(ctx context.Context) {
		s.pruneAll(ctx)
		s.clearStaleReaders()
	})
}

// pruneAll deletes every expired record, in bounded batches: each is one
// op among the others in the writer's queue, so deliveries keep being
// served between them.
func (s *Store) pruneAll(ctx context.Context) {
	pruneBatches(ctx, s.logger, func(ctx context.Context) (int, bool, error) {
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
