package dedupe

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Store and forward (docs/contract.md, "Store and forward").
//
// A queue destination's event is stored QUEUED, with its verified request,
// by the write that acknowledges the gateway (Enqueue), and delivered by
// webhookd itself: the delivery loop takes the events that are due under a
// lease (Take), attempts them, and settles each attempt, COMPLETED
// (Complete), FAILED with a reason (FailAttempt), or QUEUED again with the
// time of its next attempt (Retry). The state machine of a queued event:
//
//	absent ──Enqueue──▶ QUEUED ──Take──▶ QUEUED under an attempt's lease
//	    ──Complete──▶ COMPLETED
//	    ──FailAttempt──▶ FAILED (with the reason)
//	    ──Retry──▶ QUEUED, due at the next attempt
//	    ──the lease passing (a crash)──▶ due again: Take takes it
//	FAILED ──Requeue (redrive)──▶ QUEUED, due now, max_age counted afresh
//
// Every backend keeps a due index, ordered by (destination, due time), so
// that a delivery pass costs the events it takes, not the depth of the
// queue; an attempt's lease moves its event's due time to the end of the
// lease, which is how an attempt lost in a crash comes due again. Depth and
// the oldest waiting event of a destination are read without walking the
// queue, and the pause flags live in the store, so that they survive a
// restart and reach every node sharing it.

// Queued is the state of an event waiting in a queue destination's queue
// (or in one attempt of its delivery, under a lease).
const Queued State = 4

// CheckDestination refuses, with ErrInvalidDestination, a name that is not
// a destination's (ValidName), so that the due index's separator never
// occurs in one.
func CheckDestination(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%w: %q", ErrInvalidDestination, name)
	}
	return nil
}

// Enqueue is one verified delivery to store for a queue destination.
type Enqueue struct {
	// Key is the store key, as for Claim; its destination (Key's
	// DestinationName) is the queue the event joins.
	Key         string
	Fingerprint string   // as for Claim
	Request     *Request // the verified request as it will be forwarded; its whole body is needed
	// MaxAge is the destination's max_age: the record is kept at least
	// this long past its arrival (and Retention past its last answer), so
	// that the pruner never takes an event still being delivered.
	MaxAge time.Duration
}

// Attempt is one event taken for delivery: the lease that owns the attempt
// and the record, with its whole stored request.
type Attempt struct {
	Lease  Lease
	Record Record
}

// SettleOutcome is how an attempt ended, for Queue.Settle.
type SettleOutcome uint8

// The ways an attempt ends.
const (
	SettleComplete SettleOutcome = iota + 1 // a 2xx: COMPLETED with Response
	SettleRetry                             // QUEUED again, due at Next, Response its last answer
	SettleFail                              // FAILED with Response (the last answer) and Reason
)

// Settlement is one attempt's end, for Queue.Settle.
type Settlement struct {
	Lease    Lease
	Outcome  SettleOutcome
	Response Response
	Next     time.Time // SettleRetry
	Reason   string    // SettleFail
}

// Settler is what SettleEach needs: a backend's one-attempt settles.
type Settler interface {
	Complete(ctx context.Context, l Lease, resp Response) error
	Retry(ctx context.Context, l Lease, next time.Time, resp Response) error
	FailAttempt(ctx context.Context, l Lease, resp Response, reason string) error
}

// SettleEach settles each of settlements on its own, all at once, so that
// a backend whose writer batches the writes that wait together (Postgres's
// pipelines) writes them as one; it is that backend's Settle, and what a
// caller of Settle falls back to when the store fails the batch. A
// settlement whose write failed with the store unavailable is that one's
// error, so the second result is always nil.
func SettleEach(ctx context.Context, s Settler, settlements []Settlement) ([]error, error) {
	errs := make([]error, len(settlements))
	var wg sync.WaitGroup
	for i, st := range settlements {
		wg.Go(func() {
			switch st.Outcome {
			case SettleComplete:
				errs[i] = s.Complete(ctx, st.Lease, st.Response)
			case SettleRetry:
				errs[i] = s.Retry(ctx, st.Lease, st.Next, st.Response)
			case SettleFail:
				errs[i] = s.FailAttempt(ctx, st.Lease, st.Response, st.Reason)
			default:
				errs[i] = fmt.Errorf("dedupe: unknown settle outcome %d", st.Outcome)
			}
		})
	}
	wg.Wait()
	return errs, nil
}

// QueueStats is a destination's queue as the operator sees it.
type QueueStats struct {
	// Depth counts the events waiting: QUEUED and not in an attempt.
	Depth int
	// Oldest is the arrival (or last redrive) of the oldest waiting event;
	// zero when none waits.
	Oldest time.Time
}

// Pause is a destination's pause flag as stored.
type Pause struct {
	Paused bool
	Since  time.Time // when it was paused; zero when it is not
}

// Queue is the store's side of store and forward, which every backend
// implements beside Store. Its consumers (the receiver, the delivery loop,
// the operator's surfaces) each declare the few methods they use.
type Queue interface {
	// Enqueue stores e as QUEUED, due now, in one group-committed write:
	// (nil, nil) means it was new. A key that already has a record (a
	// gateway's retry of a queued, delivered or failed event) queues
	// nothing and returns the record (without bodies): the caller
	// acknowledges it again. ErrFingerprintMismatch (with the record),
	// ErrInvalidKey, ErrNoRequest (no whole body in e.Request),
	// ErrUnavailable, ErrClosed.
	Enqueue(ctx context.Context, e Enqueue) (*Record, error)
	// Take leases up to limit events of destination that are due at the
	// store's clock, earliest due first, for one attempt each: no other
	// Take returns an event while its lease runs (on Postgres, across
	// nodes). Each attempt ends with Complete or FailAttempt (the
	// Claimer's Complete records a 2xx), or Retry; one whose lease passes
	// unended comes due again.
	Take(ctx context.Context, destination string, limit int) ([]Attempt, error)
	// Retry puts l's event back to QUEUED, due at next, keeping resp as
	// its last answer; ErrLeaseLost when l no longer owns it.
	Retry(ctx context.Context, l Lease, next time.Time, resp Response) error
	// FailAttempt records l's event FAILED with resp (the last answer) and
	// reason; ErrLeaseLost when l no longer owns it.
	FailAttempt(ctx context.Context, l Lease, resp Response, reason string) error
	// Requeue puts a FAILED queued event back to QUEUED, due now, its
	// destination's maxAge counted from now (a redrive). ErrNotFound;
	// ErrInFlight while a lease holds it; ErrNotQueueable for a record
	// that was never queued or is not FAILED; ErrNoRequest without a whole
	// stored body.
	Requeue(ctx context.Context, key string, maxAge time.Duration) (Record, error)
	// QueueStats reads destination's depth and oldest waiting event
	// without walking its queue.
	QueueStats(ctx context.Context, destination string) (QueueStats, error)
	// QueueDestinations lists, sorted, the destinations whose queue holds
	// waiting events (a depth above 0), read from the depth bookkeeping
	// without walking a queue: the operator's surfaces show with it the
	// queues of destinations a reload removed, whose events stay
	// undelivered until a destination of that name returns.
	QueueDestinations(ctx context.Context) ([]string, error)
	// Settle ends several attempts in one write, each as Complete (a 2xx),
	// Retry or FailAttempt would (Settlement.Outcome), and returns each
	// one's logical outcome in order (nil, or ErrLeaseLost for an attempt
	// whose lease no longer owns its event, which changes nothing). An
	// error of the store itself (ErrUnavailable, ErrClosed) is the second
	// result and means none of them is known to have landed: the caller
	// settles each on its own, where Complete's answer is written again
	// until it lands (docs/contract.md, "The store under faults"). Like
	// Complete, it is written even once ctx has ended.
	Settle(ctx context.Context, settlements []Settlement) ([]error, error)
	// NextDue is when destination's earliest event comes due (ok false
	// when none is queued), so a delivery loop sleeps exactly that long.
	NextDue(ctx context.Context, destination string) (due time.Time, ok bool, err error)
	// SetPaused stores destination's pause flag (since: when it was set).
	SetPaused(ctx context.Context, destination string, paused bool) error
	// Paused reads every stored pause flag, by destination; a destination
	// never paused is absent.
	Paused(ctx context.Context) (map[string]Pause, error)
}

// QueuedExpiry is when the pruner may delete a queued event that arrived
// (or was redriven) at at: past its max_age, an attempt's lease and the
// retention, so that nothing still being delivered is pruned, and an
// event left behind by a destination a reload removed is kept as long as
// a finished one would be.
func QueuedExpiry(at time.Time, maxAge, lease, retention time.Duration) time.Time {
	return at.Add(maxAge + lease + retention)
}

// CheckEnqueue refuses what no backend queues: a bad key, a request
// without its whole body (it could not be delivered later), a negative max
// age. It returns the queue's destination, read from the key. Every
// backend checks with it.
func CheckEnqueue(e *Enqueue) (destination string, err error) {
	k, err := ParseKey(e.Key)
	if err != nil {
		return "", err
	}
	if e.Request == nil || len(e.Request.Body) != e.Request.Size {
		return "", ErrNoRequest
	}
	if e.MaxAge < 0 {
		return "", fmt.Errorf("dedupe: negative max age %s", e.MaxAge)
	}
	return k.DestinationName(), nil
}

// DecideEnqueue says what an existing record means for an Enqueue: the
// record to acknowledge again, or ErrFingerprintMismatch.
func DecideEnqueue(rec *Record, fingerprint string) (*Record, error) {
	if rec.Fingerprint != fingerprint {
		return rec, ErrFingerprintMismatch
	}
	return rec, nil
}

// CheckRequeue says whether rec may be put back to QUEUED at now.
func CheckRequeue(rec *Record, now time.Time) error {
	switch {
	case rec.Leased(now):
		return fmt.Errorf("%w: lease runs until %s", ErrInFlight, rec.LeaseUntil.Format(time.RFC3339))
	case rec.Destination == "" || rec.State != Failed:
		return fmt.Errorf("%w: key %q is %v", ErrNotQueueable, rec.Key, rec.State)
	case !rec.Request.Stored():
		return ErrNoRequest
	}
	return nil
}

// MaxReasonLen caps a stored reason.
const MaxReasonLen = 512

// CutReason cuts reason to MaxReasonLen bytes.
func CutReason(reason string) string {
	if len(reason) > MaxReasonLen {
		return reason[:MaxReasonLen]
	}
	return reason
}
