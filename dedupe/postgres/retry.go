package postgres

// What the writers do after a write failed: retry an answer, clean up a
// claim.
//
// An answer (a finish: COMPLETED, FAILED) whose write failed with the
// store unavailable, or whose outcome is unknown, is written again until
// it lands or its lease passes (dedupe/unsettled.go says why, and why that is
// safe). Its caller hears the first failure, and the retries
// run on in the background: a copy of the op goes back to the writers
// after dedupe.RetryDelay, as often as it takes. Meanwhile this node
// refuses its own claims of the key (dedupe.ErrAnswerPending, checked by
// Claim), so that a gateway's retry never finds it IN_FLIGHT with a
// passed lease here while its answer is still on the way. The lease's end
// is the database's, read on the node's clock: a node whose clock is
// behind retries a little past the lease, which the token keeps safe, and
// one ahead stops a little early.
//
// A claim whose outcome is unknown (its reply lost, its batch out of time)
// may have committed with nobody to forward under it: the key would answer
// 409 until the lease passes. It is deleted by its token, in the
// background, by one sweeper goroutine that deletes what is waiting in one
// statement and tries again while its lease runs: so a claim is answered
// within its caller's deadline (the receiver's WEBHOOKD_STORE_TIMEOUT),
// and a stall costs one queue of bounded size (abandonQueue), not a
// goroutine per claim. A clean-up the full queue cannot take is left to
// the lease, as a crash would leave it, and counted in the log.
//
// Each claim is deleted twice, the second time a while after the first
// succeeded (recheckAfter): a batch sent to a server that stalled may
// still run once the server wakes up (Postgres reads and runs the
// statements buffered on a connection whose client has gone), after the
// first delete, whereas it runs at once then, long before the second.

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webhookd/webhookd/dedupe"
)

// abandonQueue bounds the claims waiting to be cleaned up.
const abandonQueue = 4096

// recheckAfter is how long after its first delete a claim is deleted
// again (see the top of this file), at least; OpTimeout when longer.
const recheckAfter = time.Second

// retryFinish decides, once o's batch is written and before o is
// answered, whether o is a finish to write again (dedupe.Unsettled.Retry),
// and sends a copy of it back to the writers later if so.
func (s *Store) retryFinish(o *op) {
	if o.kind != opFinish || o.err == nil && o.tries == 0 {
		return // the common case costs nothing
	}
	resend := func() {
		again := newOp(o.ctx, opFinish, o.key, o.token)
		again.state, again.resp, again.until, again.tries = o.state, o.resp, o.until, o.tries+1
		again.status.Store(opAbandoned) // nobody waits for a retry
		s.resend(again)
	}
	a := dedupe.WriteAttempt{Key: o.key, Tries: o.tries, Until: o.until, Landed: o.found, Err: o.err, Retryable: retryable(o.err)}
	if s.unsettled.Retry(a, s.Now(), s.opts.Logger, resend) && o.tries == 0 {
		o.err = dedupe.Retrying(o.err)
	}
}

// retryable reports whether a finish that failed with err may land if
// written again: anything but a refusal of the values themselves (a data
// exception, a broken constraint), which would fail the same way.
func retryable(err error) bool {
	if errors.Is(err, dedupe.ErrClosed) || !errors.Is(err, dedupe.ErrUnavailable) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		class := pgErr.Code[:min(2, len(pgErr.Code))]
		return class != "22" && class != "23"
	}
	return true
}

// resend hands a retry to the writers; it runs on a timer's goroutine
// (dedupe.Unsettled.After), which Close waits for before it stops the
// writers.
func (s *Store) resend(o *op) {
	s.queued.Add(1) // the writer takes it off when it receives o
	s.ops <- o
}

// claimRef is a claim to delete by its token.
type claimRef struct {
	key   string
	token uint64
	until time.Time // its lease ends by then: past it, a takeover needs no clean-up
	// recheck: this is the second delete (see the top of this file).
	recheck bool
}

// abandon queues the claim of token on key for deletion (see the top of
// this file); it never blocks.
func (s *Store) abandon(key string, token uint64) {
	s.queueAbandon(claimRef{key: key, token: token, until: s.Now().Add(s.opts.Lease)})
}

func (s *Store) queueAbandon(c claimRef) {
	select {
	case s.abandons <- c:
	default:
		s.abandonsDropped.Add(1)
	}
}

// recheck queues the second delete of the claims in deleted whose first
// it was, after recheckAfter (or OpTimeout).
func (s *Store) recheck(deleted []claimRef) {
	var again []claimRef
	for _, c := range deleted {
		if !c.recheck {
			c.recheck = true
			again = append(again, c)
		}
	}
	if len(again) == 0 {
		return
	}
	time.AfterFunc(max(recheckAfter, s.opts.OpTimeout), func() {
		for _, c := range again {
			s.queueAbandon(c)
		}
	})
}

// sweepLoop deletes the abandoned claims, what is waiting in one
// statement, until the store closes.
func (s *Store) sweepLoop() {
	defer s.sweepWG.Done()
	var due []claimRef
	tries := 0
	for {
		if len(due) == 0 {
			select {
			case c := <-s.abandons:
				due = append(due, c)
			case <-s.quit:
				return
			}
		}
	take:
		for len(due) < abandonQueue {
			select {
			case c := <-s.abandons:
				due = append(due, c)
			default:
				break take
			}
		}
		err := s.deleteClaims(due)
		if err == nil {
			s.abandonsDeleted.Add(uint64(len(due)))
			s.recheck(due)
			due, tries = due[:0], 0
			if n := s.abandonsDropped.Swap(0); n > 0 {
				s.opts.Logger.Warn("dedupe: claims that may have been recorded without an answer were left to expire with their lease (the clean-up queue was full); their keys answer 409 until then",
					"claims", n)
			}
			continue
		}
		tries++
		now, kept := s.Now(), due[:0]
		for _, c := range due {
			if now.Before(c.until) {
				kept = append(kept, c)
			}
		}
		if len(kept) < len(due) {
			s.opts.Logger.Warn("dedupe: could not remove claims that may have been recorded without an answer; their keys answered 409 until their lease passed",
				"claims", len(due)-len(kept), "error", err.Error())
		}
		clear(due[len(kept):])
		due = kept
		select {
		case <-time.After(dedupe.RetryDelay(tries)):
		case <-s.quit:
			return
		}
	}
}

// deleteClaims deletes the IN_FLIGHT rows of claims by their tokens, in
// one statement under OpTimeout. Only a claim's own row can match its
// token.
func (s *Store) deleteClaims(claims []claimRef) error {
	keys, tokens := make([]string, len(claims)), make([]int64, len(claims))
	for i, c := range claims {
		keys[i], tokens[i] = c.key, int64(c.token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.OpTimeout)
	defer cancel()
	_, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+` r USING unnest(@keys::text[], @tokens::bigint[]) AS i (key, token)
		WHERE r.key = i.key AND r.token = i.token AND r.state = @in_flight`,
		pgx.NamedArgs{"keys": keys, "tokens": tokens, "in_flight": int16(dedupe.InFlight)})
	return err
}
