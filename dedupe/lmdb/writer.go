package lmdb

// Group commit.
//
// Every write (claim, complete, fail, release, delete, prune) is an op sent
// to one writer goroutine, which owns the only LMDB write transaction of
// this process and runs on a locked OS thread as LMDB requires. The writer
// blocks until an op arrives, then takes every op already waiting (up to
// Options.MaxBatch) and runs them all in one write transaction. Only once
// the commit is durable does any caller hear back, so an answered write is
// a durable write.
//
// Sync one behind. LMDB's mdb_txn_commit (lmdb-go's bundled mdb.c) writes
// the transaction's dirty pages (mdb_page_flush), syncs the data file
// (mdb_env_sync: fdatasync), and only then writes the meta page that makes
// the commit current (mdb_env_write_meta), through a descriptor opened
// O_DSYNC: a second sync, of one page. The environment is opened with
// MDB_NOMETASYNC (Open), which writes the meta page through the plain
// descriptor instead: one sync per commit. A commit so made is not yet
// durable, and its callers are not answered yet (Store.pending). Its meta
// page becomes durable with the next fdatasync of the file, which is
//
//   - the data sync of the next commit that writes (afterCommit): that
//     commit's own meta page goes out after that sync, so the previous
//     one is on disk first; or
//   - when no op is waiting once a commit is made, an explicit sync
//     (syncPending: mdb_env_sync with force), at once: an idle writer
//     makes its one caller wait for two syncs, as a fully synced commit
//     would, and a loaded one pays one sync per commit.
//
// The file stays consistent on an operating-system crash: every commit's
// pages are synced before its meta page is written, so a meta page on disk
// never points at pages that are not; LMDB keeps two meta pages, written in
// turn by commit ID, and opens on the newer valid one, so a crash while one
// meta page is unsynced leaves the previous commit current; and a write
// transaction reuses only pages freed before the previous commit (LMDB's
// oldest-reader rule), so the tree that commit's meta page points at is
// intact until the next commit is current. A crash therefore undoes at most
// the pending commit, whose callers have not been answered: nothing
// answered is ever lost. Readers see a commit as soon as it is made, before
// it is durable; a reader that answers a delivery from what it read (the
// duplicate's replay in Claim, the acknowledgement in Enqueue) first waits
// for the commit it saw to be durable (awaitDurable). Opening a store syncs
// the file, so that what a killed process left unsynced is durable before
// it is read (Open).
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
// There is no timer: an idle writer commits the first op at once, so one
// caller sees the latency of a single commit, and under load the batch size
// grows by itself with the number of callers waiting while the previous
// commit was syncing. That is what turns N fsyncs into one. One refinement
// keeps batches from splitting into two cohorts that take turns (those
// answered by the last commit, and those that queued during it): after
// answering more than one op, the writer yields the processor
// (runtime.Gosched, not a sleep) for as long as answered callers keep
// queueing new ops, up to the number just answered. When nobody comes
// back, it stops at the first yield.
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
// Readers never wait for the writer, but for the durability of a commit
// they answer a delivery from (above): they run in their own read
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
	// LMDB write transactions are tied to the thread that began them.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	batch := make([]*op, 0, s.opts.MaxBatch)
	s.pending = make([]*op, 0, s.opts.MaxBatch)
	answered := 0
	for {
		s.gather(answered)
		var first *op
		if len(s.pending) == 0 {
			select {
			case first = <-s.ops:
			case first = <-s.later:
			case <-s.quit:
				return
			}
		} else {
			select {
			case first = <-s.ops:
			case first = <-s.later:
			default:
				// Nothing follows to sync the pending meta page with its
				// own data: sync it alone (see the top of this file).
				answered = s.syncPending()
				continue
			}
		}
		// The writes nobody waits for go first: one handed over before a
		// write that first may be runs before it (KeepLater).
		batch = batch[:0]
	later:
		for len(batch) < s.opts.MaxBatch-1 {
			select {
			case o := <-s.later:
				batch = append(batch, o)
			default:
				break later
			}
		}
		batch = append(batch, first)
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
		committed := s.commit(batch)
		if s.opts.OnCommit != nil {
			s.opts.OnCommit(len(batch), time.Since(start))
		}
		s.commits.Add(1)
		s.writes.Add(uint64(len(batch)))
		answered = s.afterCommit(batch, committed)
		clear(batch)
	}
}

// afterCommit answers what batch's commit made durable and keeps what it
// did not for later (Store.pending), returning how many callers it
// answered. Three cases:
//
//   - batch committed and wrote: its commit synced the data file before
//     writing its own meta page, and that sync flushed the meta page of
//     the pending commit before it, so the pending ops are durable and
//     answered, and batch becomes pending in their place;
//   - batch's commit failed: nothing of batch took effect, and its ops are
//     answered at once (their error says so); the pending ops still wait
//     for their meta page's sync;
//   - batch committed and wrote nothing (every op refused, or skipped):
//     its ops read what the pending commit holds, so they wait with it.
//
// On a store opened with NoSync nothing is durable, and every op is
// answered at once.
func (s *Store) afterCommit(batch []*op, committed bool) int {
	if s.opts.NoSync {
		s.answer(batch)
		return len(batch)
	}
	switch {
	case committed && s.lastTxn() >= s.batchTxn:
		n := len(s.pending)
		s.durable.Store(s.pendingTxn)
		s.answer(s.pending)
		s.pending = append(s.pending[:0], batch...)
		s.pendingTxn = s.batchTxn
		return n
	case !committed:
		s.answer(batch)
		return len(batch)
	default:
		s.pending = append(s.pending, batch...)
		s.pendingTxn = max(s.pendingTxn, s.batchTxn-1)
		if s.pendingTxn <= s.durable.Load() {
			n := len(s.pending)
			s.answer(s.pending)
			s.pending = s.pending[:0]
			return n
		}
		return 0
	}
}

// syncPending syncs the data file, which makes the pending commit's meta
// page durable, and answers the pending ops. A sync that fails leaves
// their commit visible but of unknown durability: each is answered
// ErrUnavailable, as a commit that does not return is (an answer is then
// written again, retryAnswer), and the next commit, which holds all of
// theirs, makes it durable with its own.
func (s *Store) syncPending() int {
	if err := s.syncData(); err != nil {
		for _, o := range s.pending {
			o.err = fmt.Errorf("%w: sync the committed writes (they may still take effect): %v", dedupe.ErrUnavailable, err)
		}
	} else {
		s.durable.Store(s.pendingTxn)
	}
	n := len(s.pending)
	s.answer(s.pending)
	s.pending = s.pending[:0]
	return n
}

// syncData flushes the data file to disk (fdatasync), the meta pages
// included. Tests replace it through syncHook.
func (s *Store) syncData() error {
	if hook := s.syncHook.Load(); hook != nil {
		if err := (*hook)(); err != nil {
			return err
		}
	}
	return s.env.Sync(true)
}

// lastTxn is the ID of the environment's newest commit, whichever process
// made it.
func (s *Store) lastTxn() uint64 {
	info, err := s.env.Info()
	if err != nil {
		return 0 // taken as "did not write": the batch waits for a sync
	}
	return uint64(info.LastTxnID)
}

// answer answers every op of ops, once its commit is durable or failed.
func (s *Store) answer(ops []*op) {
	for _, o := range ops {
		if o.detached {
			if o.err != nil {
				s.logger.Warn("dedupe: could not keep a local copy of a finished record", "key", o.key, "error", o.err.Error())
			}
			continue
		}
		s.retryAnswer(o)
		o.done <- o.err
	}
	clear(ops)
}

// awaitDurable returns once the commit with ID txn (or a later one) is
// durable: a reader that is about to answer a delivery from what its read
// transaction saw (a replay, an acknowledgement) must not answer from a
// commit an operating-system crash could still undo (see the top of this
// file). Most reads see durable commits and return at once; one that saw
// the pending commit rides on the writer's next commit or sync with an op
// that writes nothing, which is answered as every op is.
func (s *Store) awaitDurable(ctx context.Context, txn uint64) error {
	if s.opts.NoSync || txn <= s.durable.Load() {
		return nil
	}
	return s.write(ctx, func(*mdb.Txn) error { return nil })
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

// commit runs batch in one transaction, growing the map and retrying when
// it is full, and reports whether the transaction committed. On return
// every op's err is its answer, to be given once the commit is durable
// (afterCommit).
func (s *Store) commit(batch []*op) bool {
	nested := s.nestEveryOp.Load()
	for {
		err := s.runBatch(batch, nested)
		if err == nil {
			return true
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
		return false
	}
}

// errRunNested aborts a batch's transaction so that commit runs the batch
// again with each op in its own nested transaction.
var errRunNested = errors.New("dedupe: an op failed after writing; run the batch again, op by op")

// runBatch runs batch's ops in one transaction and commits it. Unless
// nested, each op runs directly in the transaction, and the first op that
// fails after writing, or with anything but a logical error, aborts the
// transaction with errRunNested (see the top of this file). The
// environment is open with MDB_NOMETASYNC (Open): the commit syncs its
// data pages and writes its meta page without syncing it (afterCommit).
func (s *Store) runBatch(batch []*op, nested bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dedupe.ErrClosed
	}
	s.inBatch, s.batch = true, batchCounts{}
	defer func() { s.inBatch = false }()
	return s.env.UpdateLocked(func(txn *mdb.Txn) error {
		s.batchTxn = uint64(txn.ID())
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
