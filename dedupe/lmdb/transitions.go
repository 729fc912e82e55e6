package lmdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// Claim tries to take key for one delivery attempt. Its outcomes:
//
//   - (lease, nil, nil): the caller owns the key until lease.Until and must
//     Complete, Fail or Release it.
//   - (Lease{}, rec, nil): the key is COMPLETED or FAILED; rec holds the
//     stored response to replay.
//   - (Lease{}, rec, ErrInFlight): another attempt holds the key until
//     rec.LeaseUntil.
//   - ErrFingerprintMismatch (with rec), ErrInvalidKey, ErrUnavailable,
//     ErrClosed.
//
// A key that is absent, or IN_FLIGHT with an expired lease, is claimed in one
// atomic write transaction, which keeps req (may be nil) with the record.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, req *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Lease{}, nil, err
	}
	if s.unsettled.Holds(key) {
		// An earlier delivery's answer is being written again (writer.go):
		// its claim must not be taken over here meanwhile.
		return dedupe.Lease{}, nil, dedupe.ErrAnswerPending
	}
	// Fast path: duplicates of a finished or running event are answered
	// from a read transaction, without queueing for the writer, and
	// without copying the stored request, which a replay does not send.
	rec, err := s.Peek(ctx, key)
	switch {
	case errors.Is(err, dedupe.ErrNotFound):
	case err != nil:
		return dedupe.Lease{}, nil, err
	default:
		if r, err := dedupe.Decide(&rec, fingerprint, s.opts.Now()); err != nil || r != nil {
			return dedupe.Lease{}, r, err
		}
	}

	token, err := dedupe.NewToken()
	if err != nil {
		return dedupe.Lease{}, nil, err
	}
	var (
		lease dedupe.Lease
		found *dedupe.Record
	)
	err = s.update(ctx, func(txn *mdb.Txn) error {
		lease, found = dedupe.Lease{}, nil // the op may run twice (writer.go)
		now := s.opts.Now()
		cur, err := s.get(txn, key, responseBody)
		var attempts uint32
		created := now
		switch {
		case errors.Is(err, dedupe.ErrNotFound):
		case err != nil:
			return err
		default:
			if r, err := dedupe.Decide(&cur, fingerprint, now); err != nil || r != nil {
				found = r
				return err
			}
			attempts, created = cur.Attempts, cur.CreatedAt
			if err := s.unindex(txn, &cur); err != nil {
				return err
			}
		}
		rec := dedupe.Record{
			Key: key, State: dedupe.InFlight, Token: token,
			LeaseUntil: now.Add(s.opts.Lease), Attempts: attempts + 1,
			CreatedAt: created, UpdatedAt: now, Fingerprint: fingerprint, Request: req,
		}
		rec.ExpiresAt = rec.LeaseUntil.Add(s.opts.AbandonAfter)
		if err := s.put(txn, &rec); err != nil {
			return err
		}
		lease = dedupe.Lease{Key: key, Token: token, Until: rec.LeaseUntil}
		return nil
	})
	if err != nil {
		if !dedupe.IsLogical(err) {
			// The caller may have given up while the op still runs
			// (writer.go): found is the op's until it has answered, and
			// only an answer from the op is a logical outcome.
			return dedupe.Lease{}, nil, err
		}
		return dedupe.Lease{}, found, err
	}
	return lease, found, nil
}

// Complete records a delivered event with the downstream's response.
func (s *Store) Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(ctx, l, dedupe.Completed, resp)
}

// Fail records an event the downstream rejected permanently, with its
// response, so that later deliveries replay the rejection.
func (s *Store) Fail(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return s.finish(ctx, l, dedupe.Failed, resp)
}

func (s *Store) finish(ctx context.Context, l dedupe.Lease, st dedupe.State, resp dedupe.Response) error {
	if len(resp.Body) > dedupe.MaxStoredBody {
		resp.Body = resp.Body[:dedupe.MaxStoredBody]
	}
	return s.settleAnswer(ctx, l, func(txn *mdb.Txn) error {
		cur, err := s.owned(txn, l)
		if err != nil {
			return err
		}
		if err := s.unindex(txn, &cur); err != nil {
			return err
		}
		now := s.opts.Now()
		if cur.State != dedupe.InFlight {
			cur.Attempts++ // a redrive's answer (Redrive)
		}
		cur.State, cur.Token, cur.LeaseUntil = st, 0, time.Time{}
		cur.UpdatedAt, cur.ExpiresAt = now, now.Add(s.opts.Retention)
		cur.Response = resp
		return s.put(txn, &cur)
	})
}

// Release deletes the caller's IN_FLIGHT record so that the provider's next
// delivery of the event is forwarded afresh, or drops a redrive's lease
// from the finished record it left as it was.
func (s *Store) Release(ctx context.Context, l dedupe.Lease) error {
	return s.settle(ctx, func(txn *mdb.Txn) error {
		cur, err := s.owned(txn, l)
		if err != nil {
			return err
		}
		if cur.State == dedupe.InFlight {
			return s.del(txn, &cur)
		}
		if err := s.unindex(txn, &cur); err != nil {
			return err
		}
		cur.Token, cur.LeaseUntil = 0, time.Time{}
		return s.put(txn, &cur)
	})
}

// Redrive leases a FAILED or COMPLETED record, or an IN_FLIGHT one whose
// lease has passed, for forwarding its stored request again
// (dedupe.Store.Redrive), in one write transaction: the check
// (dedupe.CheckRedrive) and the lease cannot be split by another claim. A
// finished record changes by its token and lease only, so that a crash
// before the answer leaves it as it was.
func (s *Store) Redrive(ctx context.Context, key string) (dedupe.Lease, dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Lease{}, dedupe.Record{}, err
	}
	if s.unsettled.Holds(key) {
		return dedupe.Lease{}, dedupe.Record{}, dedupe.ErrAnswerPending // as Claim
	}
	token, err := dedupe.NewToken()
	if err != nil {
		return dedupe.Lease{}, dedupe.Record{}, err
	}
	var rec dedupe.Record
	err = s.update(ctx, func(txn *mdb.Txn) error {
		now := s.opts.Now()
		cur, err := s.get(txn, key, allBodies)
		rec = cur // the op may run twice (writer.go)
		if err != nil {
			return err
		}
		if err := dedupe.CheckRedrive(&cur, now); err != nil {
			return err
		}
		if err := s.unindex(txn, &cur); err != nil {
			return err
		}
		cur.Token, cur.LeaseUntil = token, now.Add(s.opts.Lease)
		if cur.State == dedupe.InFlight {
			// An abandoned claim, taken over as Claim would.
			cur.Attempts++
			cur.UpdatedAt, cur.ExpiresAt = now, cur.LeaseUntil.Add(s.opts.AbandonAfter)
		}
		rec = cur
		return s.put(txn, &cur)
	})
	if err != nil {
		if !dedupe.IsLogical(err) {
			// rec is the op's until it has answered (see Claim).
			return dedupe.Lease{}, dedupe.Record{}, err
		}
		return dedupe.Lease{}, rec, err
	}
	return dedupe.Lease{Key: key, Token: token, Until: rec.LeaseUntil}, rec, nil
}

// Delete removes key so that the next delivery of the event is forwarded
// again (an operator's override). It refuses, with ErrInFlight, a key whose
// lease is still running: deleting a live claim would let the provider's
// next retry be forwarded while the first forward is still under way. The
// check and the delete are one transaction.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.delete(ctx, key, false)
}

// ForceDelete removes key whatever its state, a live claim or a record that
// cannot be decoded included.
func (s *Store) ForceDelete(ctx context.Context, key string) error {
	return s.delete(ctx, key, true)
}

func (s *Store) delete(ctx context.Context, key string, force bool) error {
	if err := dedupe.CheckKey(key); err != nil {
		return err
	}
	return s.update(ctx, func(txn *mdb.Txn) error {
		cur, err := s.get(txn, key, noBodies)
		switch {
		case errors.Is(err, dedupe.ErrCorrupt) && force:
			// Its index entry cannot be found without the record; the
			// pruner drops index entries whose record is gone. Nor can
			// it say what it was counted as.
			if err := s.delKV(txn, s.records, []byte(key)); err != nil {
				return err
			}
			return s.recount(txn)
		case err != nil:
			return err
		case !force && cur.Leased(s.opts.Now()):
			return fmt.Errorf("%w: lease runs until %s", dedupe.ErrInFlight, cur.LeaseUntil.Format(time.RFC3339))
		}
		return s.del(txn, &cur)
	})
}

// owned returns the record of l's key if l still owns it: a claim's
// IN_FLIGHT record or a redriven finished one (Redrive).
func (s *Store) owned(txn *mdb.Txn, l dedupe.Lease) (dedupe.Record, error) {
	cur, err := s.get(txn, l.Key, allBodies) // rewritten whole
	if errors.Is(err, dedupe.ErrNotFound) {
		return dedupe.Record{}, dedupe.ErrLeaseLost
	}
	if err != nil {
		return dedupe.Record{}, err
	}
	if cur.Token == 0 || cur.Token != l.Token {
		return dedupe.Record{}, dedupe.ErrLeaseLost
	}
	return cur, nil
}

// Keep writes rec, a finished record copied from another store (the
// tiered store's shared one), as it is, unless the key holds a live claim
// of this store's own.
func (s *Store) Keep(ctx context.Context, rec dedupe.Record) error {
	if err := dedupe.CheckKey(rec.Key); err != nil {
		return err
	}
	return s.update(ctx, s.keepOp(rec))
}

// KeepLater is Keep without the wait: rec is handed to the writer, which
// writes it with its next commit, and nobody waits for that commit. It is
// for a copy that is a cache (the tiered store's, checked against the
// shared row before each replay), whose loss costs one read of the shared
// store; a copy the writer cannot take at once (laterOps full), or fails
// to write (logged), is not made, and neither is one still waiting when
// the store closes. It runs after every write already handed to the
// writer, and before any write handed over after it returns (writeLoop).
func (s *Store) KeepLater(rec dedupe.Record) error {
	if err := dedupe.CheckKey(rec.Key); err != nil {
		return err
	}
	o := &op{ctx: context.Background(), fn: guardTxn(s.keepOp(rec)), key: rec.Key, detached: true}
	s.queued.Add(1) // the writer takes it off when it receives o
	select {
	case s.later <- o:
		return nil
	default:
		s.queued.Add(-1)
		return fmt.Errorf("%w: the writer's queue of copies is full", dedupe.ErrUnavailable)
	}
}

func (s *Store) keepOp(rec dedupe.Record) mdb.TxnOp {
	return func(txn *mdb.Txn) error {
		cur, err := s.get(txn, rec.Key, noBodies)
		switch {
		case errors.Is(err, dedupe.ErrNotFound):
		case errors.Is(err, dedupe.ErrCorrupt):
			// What it replaces cannot say what it was counted as.
			if err := s.put(txn, &rec); err != nil {
				return err
			}
			return s.recount(txn)
		case err != nil:
			return err
		default:
			if cur.Leased(s.opts.Now()) {
				return nil
			}
			if err := s.unindex(txn, &cur); err != nil {
				return err
			}
		}
		return s.put(txn, &rec)
	}
}
