package postgres

// Group commit.
//
// Every claim, enqueue and attempt's settle (queue.go), finish (complete,
// fail) and release is an op handed to one
// of Options.Writers writer goroutines. A writer blocks until an op
// arrives, then takes every op already waiting (up to Options.MaxBatch)
// and sends them to Postgres as one pipeline of at most five multi-row
// statements over arrays (claim.go, settle.go), ending in one Sync: one
// round trip, one implicit transaction, one commit and one WAL flush for
// the whole batch. Only when the pipeline's Sync has answered, that is
// after the commit, does any caller hear back, so an answered write is a
// durable one (synchronous_commit stays on, for claims too:
// docs/store.md, "Durability of a claim").
//
// Each key appears at most once in a batch: a second op on a key waits for
// the writer's next batch, so that the statements never meet the same row
// twice and each op's answer is the row its key returned.
//
// One failing op does not fail its neighbours. The statements refuse
// logically (a lost lease, a replay, a running lease) by returning no row
// or the row found, never by raising an error. When a statement does raise
// one (a deadlock between two nodes' batches, a constraint a bad value
// broke), Postgres rolls the whole pipeline back at its Sync, and the
// writer runs every op of the batch again alone, so that only the op at
// fault hears the error. When the outcome is unknown (the connection broke
// or the batch ran out of time after the pipeline was sent), every op
// hears ErrUnavailable, and each claim in it is deleted again by its token
// in the background (abandon, retry.go), as a claim whose reply was lost
// always was.
//
// A batch runs under OpTimeout from its start. A finish or release is
// written even after its caller has stopped waiting (see settle): when its
// caller gives up, the batch holding it gets OpTimeout afresh from then. A
// finish that fails with the store unavailable, or whose outcome is
// unknown, is written again, in the background, until it lands or its
// lease passes (retryFinish, retry.go): a finish may therefore run more
// than once, which its token makes safe.
//
// Measured on the 2-core machine of BENCHMARKS.md ("Postgres"): the
// multi-row statements against the same ops pipelined one statement each
// in the same transaction (Options.pipelineEach), BenchmarkWriterBatch.
//
// Readers (Get, List, Recent, Stats) and the operator's writes (Delete,
// Redrive, Prune) do not go through the writers: they are rare, and each
// is its own statement on the pool. The tiered store's checks (UpdatedAt),
// one per duplicate, are read in batches of their own (check.go).

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webhookd/webhookd/dedupe"
)

// opKind says which statement of a batch carries an op.
type opKind uint8

const (
	opClaim opKind = iota + 1
	opFinish
	opRelease
	opEnqueue
	opAttempt // Retry, FailAttempt (queue.go)
)

// boundToCaller reports whether an op is made only for a caller still
// waiting: a claim or an enqueue nobody waits for is not written, while a
// settle is (see settle).
func (k opKind) boundToCaller() bool { return k == opClaim || k == opEnqueue }

// An op's answer status: the writer and a caller that gives up race to
// set it once.
const (
	opPending int32 = iota
	opAnswered
	opAbandoned
)

// op is one write waiting for a batch, and its answer.
type op struct {
	kind opKind
	// ctx is the caller's for a claim (a claim nobody waits for is not
	// made) and a detached one for a settle (see settle).
	ctx   context.Context
	key   string
	token uint64

	fingerprint string          // claim, enqueue
	req         *dedupe.Request // claim, enqueue
	destination string          // enqueue
	maxAge      time.Duration   // enqueue
	fail        bool            // attempt: FailAttempt, else Retry
	next        time.Time       // attempt: Retry's due time
	reason      string          // attempt: FailAttempt's
	state       dedupe.State    // finish
	resp        dedupe.Response // finish

	// The answer, written by the writer before done.
	claimed bool          // claim: the key is the caller's until rec.LeaseUntil; enqueue: the event was new
	found   bool          // claim: rec is the row the key holds; finish: rec is the row as stored
	rec     dedupe.Record //
	now     time.Time     // claim: the database's clock rec is judged by
	err     error
	// unknown: the batch may or may not have committed (claim: see abandon).
	unknown bool

	// until is a finish's lease end, the budget of its retries, and tries
	// how many times it has been written before (retryFinish).
	until time.Time
	tries int

	status atomic.Int32
	done   chan struct{} // buffered: the writer never waits for a caller
	// deadline is the batch the op rides in, once a writer has taken it.
	deadline atomic.Pointer[batchDeadline]
}

func newOp(ctx context.Context, kind opKind, key string, token uint64) *op {
	return &op{ctx: ctx, kind: kind, key: key, token: token, done: make(chan struct{}, 1)}
}

// batchDeadline bounds one batch: OpTimeout from its start, restarted by a
// settle's caller giving up (extend).
type batchDeadline struct {
	timer   *time.Timer
	timeout time.Duration
}

// extend gives the batch OpTimeout from now, unless it has run out already
// (the statements are being cancelled) or finished.
func (d *batchDeadline) extend() {
	if d.timer.Stop() {
		d.timer.Reset(d.timeout)
	}
}

// send hands o to a writer and waits for its answer, or for ctx to end. A
// claim whose caller gives up is answered ctx's error: if it is in a batch
// that commits it, the writer deletes it again (abandon), so nobody holds
// a lease nobody forwards under. A settle is handed over whatever ctx
// says, and written when its turn comes; only the caller's wait ends.
func (s *Store) send(ctx context.Context, o *op) error {
	s.sendMu.RLock()
	if s.closed.Load() {
		s.sendMu.RUnlock()
		return dedupe.ErrClosed
	}
	s.senders.Add(1)
	s.sendMu.RUnlock()
	s.queued.Add(1) // the writer takes it off when it receives o
	select {
	case s.ops <- o:
		s.senders.Done()
	case <-ctx.Done():
		if o.kind.boundToCaller() {
			s.queued.Add(-1)
			s.senders.Done()
			return ctx.Err()
		}
		// The writers are all busy or stuck: the settle is handed over in
		// the background, and Close waits for it.
		go func() {
			defer s.senders.Done()
			s.ops <- o
		}()
		return fmt.Errorf("dedupe: postgres: gave up waiting for a writer (the write will still take effect): %w", ctx.Err())
	}
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		if !o.status.CompareAndSwap(opPending, opAbandoned) {
			<-o.done // answered at the same moment: that stands
			return o.err
		}
		if d := o.deadline.Load(); d != nil && !o.kind.boundToCaller() {
			d.extend()
		}
		if o.kind.boundToCaller() {
			return ctx.Err()
		}
		return fmt.Errorf("dedupe: postgres: gave up waiting for the commit (the write may still take effect): %w", ctx.Err())
	}
}

// answer gives o its answer, unless its caller has gone. A claim that may
// have been made without its caller hearing so (the outcome unknown, or
// the caller gone) is deleted again in the background (abandon), so that
// the caller's answer never waits for that clean-up.
func (s *Store) answer(o *op) {
	answered := o.status.CompareAndSwap(opPending, opAnswered)
	if o.kind == opClaim && (o.unknown || o.claimed && !answered) {
		s.abandon(o.key, o.token)
	}
	if answered {
		o.done <- struct{}{}
	}
}

// writeLoop is one writer: it takes what is waiting, writes it as one
// batch, answers, and starts again. On quit it writes what is left.
func (s *Store) writeLoop() {
	defer s.writerWG.Done()
	var (
		batch = make([]*op, 0, s.opts.MaxBatch)
		later []*op // ops on a key the last batch already had
		keys  = make(map[string]struct{}, s.opts.MaxBatch)
	)
	for {
		s.gather(len(batch))
		batch = batch[:0]
		clear(keys)
		take := func(o *op) {
			if _, dup := keys[o.key]; dup {
				later = append(later, o)
				return
			}
			keys[o.key] = struct{}{}
			batch = append(batch, o)
		}
		waiting := later
		later = nil
		for _, o := range waiting {
			take(o)
		}
		if len(batch) == 0 {
			select {
			case o := <-s.ops:
				take(o)
			case <-s.quit:
				if !s.drain(take) {
					return
				}
			}
		}
	gather:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o := <-s.ops:
				take(o)
			default:
				break gather
			}
		}
		s.queued.Add(-int64(len(batch) - len(waiting) + len(later)))
		s.write(batch)
		for _, o := range batch {
			s.retryFinish(o)
			s.answer(o)
		}
	}
}

// gather lets the callers answered by the last batch (of last ops) queue
// their next op before the writer takes the next batch, so that one batch
// serves them all instead of the first few: a batch's fixed cost (its
// round trip, commit, WAL flush and count triggers) is most of what a
// small one costs Postgres. It yields while the queue keeps growing and returns at
// once when it does not; it never sleeps. (dedupe/lmdb's writer does the
// same; BenchmarkWriterBatch's no-gather variant measures it here.)
func (s *Store) gather(last int) {
	if last < 2 || s.opts.noGather {
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

// drain takes what is left in the queue once the store is closing; false
// when nothing was.
func (s *Store) drain(take func(*op)) bool {
	select {
	case o := <-s.ops:
		take(o)
		return true
	default:
		return false
	}
}

// write runs batch as one pipeline and sets every op's answer. A
// statement error rolls the pipeline back; the ops then run again one by
// one, so that the error reaches only the op that caused it.
func (s *Store) write(batch []*op) {
	live := batch[:0:0]
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			// A claim whose caller has gone: nobody would forward under it.
			o.err = err
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	start := time.Now()
	err := s.runBatch(live)
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(len(live), time.Since(start))
	}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return
	case errors.As(err, &pgErr) && len(live) > 1:
		s.redone.Add(1)
		for _, o := range live {
			o.claimed, o.found, o.err = false, false, nil
			s.write([]*op{o})
		}
		return
	case errors.As(err, &pgErr):
		// Rolled back: this op alone caused it.
		live[0].err = s.wrap(live[0].kind.String(), err)
		return
	}
	// The pipeline may have committed, or not.
	for _, o := range live {
		o.claimed, o.found, o.unknown = false, false, true
		o.err = s.wrap(o.kind.String(), err)
	}
}

func (k opKind) String() string {
	switch k {
	case opClaim:
		return "claim"
	case opFinish:
		return "finish"
	case opEnqueue:
		return "enqueue"
	case opAttempt:
		return "settle attempt"
	}
	return "release"
}

// runBatch sends the batch's statements in one pipeline and reads their
// answers into the ops. It returns once the pipeline's Sync has answered:
// after the commit, or the rollback.
func (s *Store) runBatch(live []*op) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &batchDeadline{timer: time.AfterFunc(s.opts.OpTimeout, cancel), timeout: s.opts.OpTimeout}
	defer d.timer.Stop()
	var claims, finishes, releases, enqueues, attempts []*op
	for _, o := range live {
		o.deadline.Store(d)
		switch o.kind {
		case opClaim:
			claims = append(claims, o)
		case opEnqueue:
			enqueues = append(enqueues, o)
		case opAttempt:
			attempts = append(attempts, o)
		case opFinish:
			finishes = append(finishes, o)
		default:
			releases = append(releases, o)
		}
	}
	for _, o := range live {
		if !o.kind.boundToCaller() && o.status.Load() == opAbandoned {
			d.extend() // its caller gave up before the batch began
			break
		}
	}
	b := &pgx.Batch{}
	if s.opts.pipelineEach {
		s.queueEach(b, claims, finishes, releases)
	} else {
		s.queueClaims(b, claims)
		s.queueFinishes(b, finishes)
		s.queueReleases(b, releases)
	}
	s.queueEnqueues(b, enqueues)
	s.queueAttempts(b, attempts)
	s.commits.Add(1)
	s.writes.Add(uint64(len(live)))
	return s.pool.SendBatch(ctx, b).Close()
}
