package lmdb

// Group commit.
//
// Every write (claim, complete, fail, release, delete, prune) is an op sent
// to one writer goroutine, which owns the only LMDB write transaction of
// this process and holds its OS thread locked for each transaction, as
// LMDB requires (between transactions it is not locked: see writeLoop). The writer
// blocks until an op arrives, then takes every op already waiting (up to
// Options.MaxBatch) and runs them all in one write transaction. Only after
// the commit has been synced to disk does any caller hear back, so an
// answered write is a durable write.
//
// An op that fails is rolled back alone and the others still commit. The
// ops run directly in the batch's transaction, not each in a nested one
// (txn.Sub): LMDB's nested transaction allocates and merges its own dirty
// page lists for every op (BenchmarkClaimComplete's mode=nested against
// mode=group: a fifth more CPU per webhook at 64 callers, BENCHMARKS.md).
// Nearly every op that fails
// refuses before it writes anything (a duplicate, a lost lease), and such
// a failure needs no rollback: the writer knows by counting the writes
// (Store.changes) around the op. Only when an op fails after writing, or
// with an LMDB or I/O error (which may leave the transaction unusable),
// is the transaction aborted and the batch run again from the start with
// each op in its own nested transaction (Store.redone counts these). The
// counts entry (counts.go) is likewise written once per batch, not once
// per op.
//
// An idle writer commits the first op at once, so one caller sees the
// latency of a single commit, and under load the batch size grows by
// itself with the number of callers waiting while the previous commit was
// syncing. That is what turns N fsyncs into one. One refinement keeps
// batches from splitting into two cohorts that take turns (those answered
// by the last commit, and those that queued during it): after a commit of
// gatherMin ops or more, while more are queued, the writer takes ops as
// they arrive until the batch holds as many as the one just committed, or
// for gatherWait at most.
//
// A commit that fails (disk full, I/O error) aborts the whole transaction:
// every op in the batch is answered ErrUnavailable and none of them took
// effect. An op that fails on its own (a logical outcome such as
// ErrLeaseLost, or a storage error raised inside it) changes nothing. An
// answer (complete, fail) that fails so is sent to the writer again, after
// a delay, until it lands or its lease passes (retryAnswer,
// dedupe.Unsettled): its caller hears the first failure.
//
// An op's function may run more than once: when LMDB reports the map full,
// the whole transaction is aborted, the map is grown, and the batch is run
// again from the start; so it is when an op fails after writing. Op
// functions therefore only read and write through the transaction they are
// given and set their results afresh on each run.
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

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

type op struct {
	ctx  context.Context
	fn   mdb.TxnOp
	err  error
	done chan error // buffered: the writer never waits for a caller

	// An answer's write (settleAnswer) is retried until it lands or its
	// lease passes (retryAnswer): key and until are its lease's, tries
	// how many times it was written before. A zero until is no answer.
	key   string
	until time.Time
	tries int

	// detached marks a write nobody waits for (KeepLater): it is answered
	// to the log, and only when it fails.
	detached bool
}

// write hands fn to the writer and waits for the commit that holds it, or
// for ctx to end, whichever comes first: a disk whose fsync never returns
// must not hold every caller forever. A caller that gives up is answered
// ctx's error, and its op:
//   - if the writer has not received it, never runs;
//   - if the writer receives it after ctx ended, is skipped (runBatch);
//     settle's ops are the exception: they always run (see settle);
//   - if it is already in the commit under way, takes effect with that
//     commit, unknown to its caller. A claim made so is held by nobody and
//     expires with its lease, as one left by a crash does; a complete,
//     fail or release that lands late records what its caller meant.
//
// An op is reused (Store.opPool) once the writer has answered it, or when
// the writer never received it; one whose caller gave up is left to the
// garbage collector, since the writer may still hold it.
func (s *Store) write(ctx context.Context, fn mdb.TxnOp) error {
	return s.send(ctx, s.newOp(ctx, fn))
}

// settle is write for the ops that record how a claimed delivery ended
// (complete, fail, release). Unlike a claim, such a write is worth making
// even after its caller has stopped waiting: it only records what happened
// under a lease that its token still guards (one that lost the lease gets
// ErrLeaseLost and changes nothing). Skipped, it would leave the key
// IN_FLIGHT until the lease passes, and the provider's next delivery of an
// event the core service already has would be forwarded again. So the op
// is handed to the writer whatever ctx says, and runs when its turn comes;
// only the caller's wait ends with ctx.
func (s *Store) settle(ctx context.Context, fn mdb.TxnOp) error {
	return s.send(ctx, s.newOp(context.WithoutCancel(ctx), guardTxn(fn)))
}

// settleAnswer is settle for an answer (complete, fail) under l: if it
// fails with the store unavailable, it is written again until it lands or
// l passes (retryAnswer).
func (s *Store) settleAnswer(ctx context.Context, l dedupe.Lease, fn mdb.TxnOp) error {
	o := s.newOp(context.WithoutCancel(ctx), guardTxn(fn))
	o.key, o.until = l.Key, l.Until
	return s.send(ctx, o)
}

// newOp takes an op from the pool (or makes one) for fn, run under ctx.
func (s *Store) newOp(ctx context.Context, fn mdb.TxnOp) *op {
	o, _ := s.opPool.Get().(*op)
	if o == nil {
		o = &op{done: make(chan error, 1)}
	}
	o.ctx, o.fn, o.err = ctx, fn, nil
	o.key, o.until, o.tries = "", time.Time{}, 0
	return o
}

func (s *Store) send(ctx context.Context, o *op) error {
	s.queued.Add(1) // the writer takes it off when it receives o
	select {
	case s.ops <- o:
	case <-s.quit:
		s.queued.Add(-1)
		s.putOp(o)
		return dedupe.ErrClosed
	case <-ctx.Done():
		if o.ctx.Done() != nil {
			s.queued.Add(-1)
			s.putOp(o)
			return ctx.Err()
		}
		// An op that must land (settle) is handed over in the background:
		// the writer is stuck or busy, and this caller may not wait longer.
		// It is not returned to the pool: nobody reads its answer.
		go func() {
			select {
			case s.ops <- o:
			case <-s.quit:
				s.queued.Add(-1)
			}
		}()
		return fmt.Errorf("dedupe: gave up waiting for the writer (the write will still take effect): %w", ctx.Err())
	}
	select {
	case err := <-o.done:
		s.putOp(o)
		return err
	case <-ctx.Done():
		select {
		case err := <-o.done: // answered at the same moment: that stands
			s.putOp(o)
			return err
		default:
		}
		return fmt.Errorf("dedupe: gave up waiting for the commit (the write may still take effect): %w", ctx.Err())
	}
}

// putOp returns o, which the writer no longer holds and whose done channel
// is empty, to the pool, without the references of its last write.
func (s *Store) putOp(o *op) {
	o.ctx, o.fn, o.err, o.key = nil, nil, nil, ""
	s.opPool.Put(o)
}

// retryAnswer decides, once o's commit has ended and before o is
// answered, whether o is an answer to write again
// (dedupe.Unsettled.Retry), and sends a copy of it back to the writer
// later if so. Only a failure of the store itself is retried: a commit
// that failed took nothing, and an op that failed alone was rolled back.
func (s *Store) retryAnswer(o *op) {
	if o.until.IsZero() || o.err == nil && o.tries == 0 {
		return // the common case costs nothing
	}
	// The copy is made now: o goes back to the pool once answered.
	again := &op{ctx: o.ctx, fn: o.fn, done: make(chan error, 1), key: o.key, until: o.until, tries: o.tries + 1}
	retryable := errors.Is(o.err, dedupe.ErrUnavailable) && !errors.Is(o.err, dedupe.ErrClosed)
	a := dedupe.WriteAttempt{Key: o.key, Tries: o.tries, Until: o.until, Landed: o.err == nil, Err: o.err, Retryable: retryable}
	if errors.Is(o.err, dedupe.ErrLeaseLost) {
		a.Err = nil // an answer to the retry: the lease is gone
	}
	if s.unsettled.Retry(a, s.opts.Now(), s.logger, func() { s.resend(again) }) && o.tries == 0 {
		o.err = dedupe.Retrying(o.err)
	}
}

// resend hands a retry to the writer; it runs on a timer's goroutine
// (dedupe.Unsettled.After), which Close waits for before it stops the
// writer. Nobody waits for its answer.
func (s *Store) resend(o *op) {
	s.queued.Add(1) // the writer takes it off when it receives o
	select {
	case s.ops <- o:
	case <-s.quit:
		s.queued.Add(-1)
	}
}

func (s *Store) writeLoop() {
	defer s.writerWG.Done()
	batch := make([]*op, 0, s.opts.MaxBatch)
	gatherTimer := time.NewTimer(time.Hour)
	gatherTimer.Stop()
	for {
		last := len(batch)
		batch = batch[:0]
		select {
		case o := <-s.ops:
			// A write nobody waits for (KeepLater) runs before every write
			// handed over after it: the copies waiting are taken ahead of
			// each op received, which may carry a batch past MaxBatch by
			// as many.
			batch = append(s.takeLater(batch), o)
		case o := <-s.later:
			batch = s.takeLater(append(batch, o))
		case <-s.quit:
			return
		}
		batch = s.gather(batch, last, gatherTimer)
	drain:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o := <-s.ops:
				batch = append(s.takeLater(batch), o)
			default:
				break drain
			}
		}
		s.queued.Add(-int64(len(batch)))
		start := time.Now()
		// LMDB write transactions are tied to the thread that began them;
		// between them the writer is an ordinary goroutine, which the
		// next op's sender wakes on its own thread: a goroutine locked to
		// a thread is woken by handing a processor over to that thread.
		runtime.LockOSThread()
		s.commit(batch)
		runtime.UnlockOSThread()
		if s.opts.OnCommit != nil {
			s.opts.OnCommit(len(batch), time.Since(start))
		}
		s.commits.Add(1)
		s.writes.Add(uint64(len(batch)))
		// Answer only now: the commit that holds every op is on disk, or
		// failed and took none of them.
		for _, o := range batch {
			if o.detached {
				if o.err != nil {
					s.logger.Warn("dedupe: could not keep a local copy of a finished record", "key", o.key, "error", o.err.Error())
				}
				continue
			}
			s.retryAnswer(o)
			o.done <- o.err
		}
		clear(batch)
	}
}

// takeLater appends to batch the writes nobody waits for that are waiting
// (KeepLater).
func (s *Store) takeLater(batch []*op) []*op {
	for {
		select {
		case o := <-s.later:
			batch = append(batch, o)
		default:
			return batch
		}
	}
}

// gatherWait bounds how long the writer waits, after the first op of a
// batch, for the callers that the last commit answered; gatherMin is the
// smallest last commit it waits after.
const (
	gatherWait = 200 * time.Microsecond
	gatherMin  = 8
)

// gather lets callers answered by the last commit (of last ops) queue
// their next op before the writer commits the next batch, so that under
// load one commit serves them all: it takes ops as they arrive until the
// batch holds last of them or gatherWait has passed. The writer blocks on
// its queue meanwhile rather than yielding: a yielding goroutine goes to
// the back of the run queue, behind every runnable one (at 64 clients a
// writer that yielded waited for a processor 0.70 s of every 2 s,
// BENCHMARKS.md), while a blocked one is woken by the op's sender at once.
//
// It waits only under load: after a commit of gatherMin ops or more, and
// while more ops are queued than the batch holds. Under a lighter load the
// callers just answered are away for milliseconds (forwarding), merging a
// few of them saves little, and an idle process's timers fire late (Go's
// poller sleeps whole milliseconds: a 200 µs wait could be one of 1 ms for
// the ops already taken). Waiting after every commit of two or more cost
// 5 % of the deliveries at 16 clients (BENCHMARKS.md, the LMDB writer).
func (s *Store) gather(batch []*op, last int, t *time.Timer) []*op {
	if last < gatherMin || len(batch) >= last || s.queued.Load() <= int64(len(batch)) {
		return batch
	}
	t.Reset(gatherWait)
	defer t.Stop()
	for len(batch) < last && len(batch) < s.opts.MaxBatch {
		select {
		case o := <-s.ops:
			batch = append(s.takeLater(batch), o)
		case <-t.C:
			return batch
		case <-s.quit:
			return batch
		}
	}
	return batch
}

// commit runs batch in one durable transaction, growing the map and
// retrying when it is full. On return every op's err is its answer.
func (s *Store) commit(batch []*op) {
	nested := s.nestEveryOp.Load()
	for {
		err := s.runBatch(batch, nested)
		if err == nil {
			return
		}
		if errors.Is(err, errRunNested) {
			s.redone.Add(1)
			nested = true
			continue
		}
		if isErrno(err, mdb.MapFull) {
			gerr := s.growMap()
			if gerr == nil {
				continue
			}
			err = gerr
		} else if isErrno(err, mdb.MapResized) {
			if aerr := s.adoptMapSize(); aerr == nil {
				continue
			}
		}
		// The transaction was aborted: nothing in it happened.
		for _, o := range batch {
			o.err = fmt.Errorf("%w: %v", dedupe.ErrUnavailable, err)
		}
		return
	}
}

// errRunNested aborts a batch's transaction so that commit runs the batch
// again with each op in its own nested transaction.
var errRunNested = errors.New("dedupe: an op failed after writing; run the batch again, op by op")

// runBatch runs batch's ops in one transaction and commits it. Unless
// nested, each op runs directly in the transaction, and the first op that
// fails after writing, or with anything but a logical error, aborts the
// transaction with errRunNested (see the top of this file). The commit is
// fully synced: LMDB syncs the data pages, then writes the meta page
// through a descriptor opened O_DSYNC.
func (s *Store) runBatch(batch []*op, nested bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dedupe.ErrClosed
	}
	s.inBatch, s.batch = true, batchCounts{}
	defer func() { s.inBatch = false }()
	return s.env.UpdateLocked(func(txn *mdb.Txn) error {
		for _, o := range batch {
			if err := o.ctx.Err(); err != nil {
				// Its caller has given up (or is about to): a write
				// nobody waits for must not be made.
				o.err = err
				continue
			}
			if nested {
				counts := s.batch
				if o.err = txn.Sub(o.fn); o.err != nil {
					s.batch = counts // rolled back with the op
				}
			} else {
				before := s.changes
				o.err = o.fn(txn)
				if o.err != nil && !isErrno(o.err, mdb.MapFull) &&
					(s.changes != before || !dedupe.IsLogical(o.err)) {
					return errRunNested
				}
			}
			if isErrno(o.err, mdb.MapFull) {
				return o.err
			}
			if o.err != nil && !dedupe.IsLogical(o.err) {
				// An LMDB or I/O error inside one op: that op alone is
				// rolled back by Sub, and reports the store unavailable.
				o.err = fmt.Errorf("%w: %v", dedupe.ErrUnavailable, o.err)
			}
		}
		if err := s.flushCounts(txn); err != nil {
			return err
		}
		if hook := s.commitHook.Load(); hook != nil {
			return (*hook)()
		}
		return nil
	})
}

// isErrno is mdb.IsErrno that also sees through wrapping.
func isErrno(err error, errno mdb.Errno) bool {
	if err == nil {
		return false
	}
	var oe *mdb.OpError
	if errors.As(err, &oe) {
		return oe.Errno == errno
	}
	return mdb.IsErrno(err, errno)
}
