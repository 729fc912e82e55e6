package lmdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// The queue of store and forward (dedupe.Queue). A QUEUED record has an
// entry in dbiDue at its NextAttempt and, while no attempt holds it, one in
// dbiWaiting at its QueuedAt, counted in its destination's depth entry;
// put and unindex move them with the record in the same transaction as
// every index. Every write is an op of the writer (writer.go), so an
// enqueue is group-committed with the claims and settles around it.

// enqueueIndex writes the queue entries of rec, a record put.
func (s *Store) enqueueIndex(txn *mdb.Txn, rec *dedupe.Record) error {
	if rec.State != dedupe.Queued {
		return nil
	}
	key := []byte(rec.Key)
	s.wkey = queueIndexKey(s.wkey[:0], rec.Destination, rec.NextAttempt, rec.Key)
	if err := s.putKV(txn, s.due, s.wkey, key); err != nil {
		return err
	}
	if rec.Token != 0 {
		return nil // in an attempt: not waiting
	}
	s.wkey = queueIndexKey(s.wkey[:0], rec.Destination, rec.QueuedAt, rec.Key)
	if err := s.putKV(txn, s.waiting, s.wkey, key); err != nil {
		return err
	}
	return s.addDepth(txn, rec.Destination, 1)
}

// unqueue deletes the queue entries of rec, a record unindexed or pruned.
func (s *Store) unqueue(txn *mdb.Txn, rec *dedupe.Record) error {
	if rec.State != dedupe.Queued {
		return nil
	}
	s.wkey = queueIndexKey(s.wkey[:0], rec.Destination, rec.NextAttempt, rec.Key)
	if err := s.delKV(txn, s.due, s.wkey); err != nil && !mdb.IsNotFound(err) {
		return err
	}
	if rec.Token != 0 {
		return nil
	}
	s.wkey = queueIndexKey(s.wkey[:0], rec.Destination, rec.QueuedAt, rec.Key)
	switch err := s.delKV(txn, s.waiting, s.wkey); {
	case mdb.IsNotFound(err):
		return nil // not counted either
	case err != nil:
		return err
	}
	return s.addDepth(txn, rec.Destination, -1)
}

// addDepth adds delta to destination's depth entry, never below zero.
func (s *Store) addDepth(txn *mdb.Txn, destination string, delta int) error {
	k := append([]byte(depthPrefix), destination...)
	n, err := readDepth(txn, s.meta, k)
	if err != nil {
		return err
	}
	if delta < 0 && n < uint64(-delta) {
		n = 0
	} else {
		n += uint64(delta)
	}
	if n == 0 {
		if err := s.delKV(txn, s.meta, k); err != nil && !mdb.IsNotFound(err) {
			return err
		}
		return nil
	}
	return s.putKV(txn, s.meta, k, binary.BigEndian.AppendUint64(nil, n))
}

func readDepth(txn *mdb.Txn, meta mdb.DBI, k []byte) (uint64, error) {
	v, err := getGuarded(txn, meta, k)
	switch {
	case mdb.IsNotFound(err):
		return 0, nil
	case err != nil:
		return 0, err
	case len(v) != 8:
		return 0, fmt.Errorf("%w: depth entry %q of %d bytes", dedupe.ErrCorrupt, k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Enqueue stores e QUEUED, due now, unless its key has a record already
// (dedupe.Queue.Enqueue). A gateway's retry is answered from a read
// transaction, without queueing for the writer.
func (s *Store) Enqueue(ctx context.Context, e dedupe.Enqueue) (*dedupe.Record, error) {
	destination, err := dedupe.CheckEnqueue(&e)
	if err != nil {
		return nil, err
	}
	rec, err := s.read1(e.Key, noBodies)
	switch {
	case errors.Is(err, dedupe.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		return dedupe.DecideEnqueue(&rec, e.Fingerprint)
	}
	var found *dedupe.Record
	err = s.update(ctx, func(txn *mdb.Txn) error {
		found = nil // the op may run twice (writer.go)
		cur, err := s.get(txn, e.Key, noBodies)
		switch {
		case errors.Is(err, dedupe.ErrNotFound):
		case err != nil:
			return err
		default:
			var derr error
			found, derr = dedupe.DecideEnqueue(&cur, e.Fingerprint)
			return derr
		}
		now := s.opts.Now()
		return s.put(txn, &dedupe.Record{
			Key: e.Key, State: dedupe.Queued, CreatedAt: now, UpdatedAt: now,
			ExpiresAt:   dedupe.QueuedExpiry(now, e.MaxAge, s.opts.Lease, s.opts.Retention),
			Fingerprint: e.Fingerprint, Request: e.Request,
			Destination: destination, QueuedAt: now, NextAttempt: now,
		})
	})
	if err != nil && !dedupe.IsLogical(err) {
		return nil, err // found is the op's until it has answered (Claim)
	}
	return found, err
}

// Take leases up to limit due events of destination, in one write
// transaction: the walk of the due index and the leases cannot be split by
// another Take (of this process or another on the same directory, which
// LMDB's writer lock serialises).
func (s *Store) Take(ctx context.Context, destination string, limit int) ([]dedupe.Attempt, error) {
	if err := dedupe.CheckDestination(destination); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	tokens := make([]uint64, limit)
	for i := range tokens {
		t, err := dedupe.NewToken()
		if err != nil {
			return nil, err
		}
		tokens[i] = t
	}
	var taken []dedupe.Attempt
	err := s.update(ctx, func(txn *mdb.Txn) error {
		taken = taken[:0] // the op may run twice (writer.go)
		now := s.opts.Now()
		recs, stale, err := s.dueRecords(txn, destination, now, limit)
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := s.delKV(txn, s.due, k); err != nil {
				return err
			}
		}
		for i := range recs {
			cur := &recs[i]
			if cur.Leased(now) {
				continue
			}
			if err := s.lease(txn, cur, tokens[len(taken)], now); err != nil {
				return err
			}
			taken = append(taken, dedupe.Attempt{Lease: dedupe.Lease{Key: cur.Key, Token: cur.Token, Until: cur.LeaseUntil}, Record: *cur})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return taken, nil
}

// lease gives rec, QUEUED and due, to an attempt under token until a lease
// from now: the record is rewritten, and of its index entries only those a
// lease changes, since its state, creation and expiry stay as they are
// (put and unindex would delete and write again all of them, and the
// counts, for every event a delivery pass takes). Due again when the lease
// passes: an attempt lost in a crash is taken again then.
func (s *Store) lease(txn *mdb.Txn, rec *dedupe.Record, token uint64, now time.Time) error {
	s.wkey = queueIndexKey(s.wkey[:0], rec.Destination, rec.NextAttempt, rec.Key)
	if err := s.delKV(txn, s.due, s.wkey); err != nil && !mdb.IsNotFound(err) {
		return err
	}
	if rec.Token == 0 {
		// Waiting until now: no longer, while the attempt holds it.
		s.wkey = queueIndexKey(s.wkey[:0], rec.Destination, rec.QueuedAt, rec.Key)
		switch err := s.delKV(txn, s.waiting, s.wkey); {
		case err == nil:
			if err := s.addDepth(txn, rec.Destination, -1); err != nil {
				return err
			}
		case !mdb.IsNotFound(err):
			return err
		}
	}
	rec.Token, rec.LeaseUntil = token, now.Add(s.opts.Lease)
	rec.NextAttempt, rec.UpdatedAt = rec.LeaseUntil, now
	s.wval = encodeRecord(s.wval[:0], rec)
	s.wkey = append(s.wkey[:0], rec.Key...)
	if err := s.putKV(txn, s.records, s.wkey, s.wval); err != nil {
		return err
	}
	s.wkey = queueIndexKey(s.wkey[:0], rec.Destination, rec.NextAttempt, rec.Key)
	return s.putKV(txn, s.due, s.wkey, []byte(rec.Key))
}

// dueRecords walks destination's due index from its earliest entry and
// returns the records, whole, of up to limit entries due at now, and the
// index keys of entries whose record is gone or no longer QUEUED (left by
// nothing this package writes, but never trusted over the record), to
// delete.
func (s *Store) dueRecords(txn *mdb.Txn, destination string, now time.Time, limit int) (recs []dedupe.Record, stale [][]byte, err error) {
	cur, err := txn.OpenCursor(s.due)
	if err != nil {
		return nil, nil, err
	}
	defer cur.Close()
	prefix := queuePrefix(destination)
	k, v, err := cur.Get(prefix, nil, mdb.SetRange)
	for ; err == nil && len(recs) < limit && bytes.HasPrefix(k, prefix); k, v, err = cur.Get(nil, nil, mdb.Next) {
		s.dueRead.Add(1)
		at, ok := splitQueueIndexKey(k, destination)
		if ok && at.After(now) {
			break
		}
		rec, gerr := s.get(txn, string(v), allBodies)
		if errors.Is(gerr, dedupe.ErrCorrupt) {
			// It cannot be delivered, nor rewritten as FAILED: out of the
			// queue, so that it stops no pass, and left for Check.
			s.logger.Warn("dedupe: a queued record does not decode; it is taken off the queue", "key", string(v))
			stale = append(stale, bytes.Clone(k))
			continue
		}
		if !ok || errors.Is(gerr, dedupe.ErrNotFound) || gerr == nil && rec.State != dedupe.Queued {
			stale = append(stale, bytes.Clone(k))
			continue
		}
		if gerr != nil {
			return nil, nil, gerr
		}
		recs = append(recs, rec)
	}
	if err != nil && !mdb.IsNotFound(err) {
		return nil, nil, err
	}
	return recs, stale, nil
}

// Retry puts l's event back to QUEUED, due at next, with resp as its last
// answer.
func (s *Store) Retry(ctx context.Context, l dedupe.Lease, next time.Time, resp dedupe.Response) error {
	if len(resp.Body) > dedupe.MaxStoredBody {
		resp.Body = resp.Body[:dedupe.MaxStoredBody]
	}
	return s.settle(ctx, func(txn *mdb.Txn) error {
		cur, err := s.ownedQueued(txn, l)
		if err != nil {
			return err
		}
		if err := s.unindex(txn, &cur); err != nil {
			return err
		}
		cur.Token, cur.LeaseUntil = 0, time.Time{}
		cur.Attempts++
		cur.Retries++
		cur.NextAttempt, cur.UpdatedAt, cur.Response = next, s.opts.Now(), resp
		return s.put(txn, &cur)
	})
}

// FailAttempt records l's event FAILED with resp and reason.
func (s *Store) FailAttempt(ctx context.Context, l dedupe.Lease, resp dedupe.Response, reason string) error {
	if len(resp.Body) > dedupe.MaxStoredBody {
		resp.Body = resp.Body[:dedupe.MaxStoredBody]
	}
	return s.settle(ctx, func(txn *mdb.Txn) error {
		cur, err := s.ownedQueued(txn, l)
		if err != nil {
			return err
		}
		if err := s.unindex(txn, &cur); err != nil {
			return err
		}
		now := s.opts.Now()
		cur.State, cur.Token, cur.LeaseUntil = dedupe.Failed, 0, time.Time{}
		cur.Attempts++
		cur.UpdatedAt, cur.ExpiresAt = now, now.Add(s.opts.Retention)
		cur.Response, cur.Reason = resp, dedupe.CutReason(reason)
		return s.put(txn, &cur)
	})
}

// Settle ends every settlement's attempt in one op of the writer, so that
// a delivery pass records the answers of its attempts in one write
// (dedupe.Queue.Settle). An attempt whose lease is lost changes nothing
// and is that settlement's ErrLeaseLost; any other error inside fails the
// op whole (the writer rolls it back), and the caller settles each on its
// own, where a completion's write is retried as Complete's is.
func (s *Store) Settle(ctx context.Context, settlements []dedupe.Settlement) ([]error, error) {
	for i := range settlements {
		if r := &settlements[i].Response; len(r.Body) > dedupe.MaxStoredBody {
			r.Body = r.Body[:dedupe.MaxStoredBody]
		}
	}
	errs := make([]error, len(settlements))
	err := s.settle(ctx, func(txn *mdb.Txn) error {
		for i := range settlements {
			// The op may run twice (writer.go): each run sets every answer.
			errs[i] = s.settleOne(txn, &settlements[i])
			if errs[i] != nil && !errors.Is(errs[i], dedupe.ErrLeaseLost) {
				return errs[i]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// settleOne writes one settlement in txn, as Complete, Retry or
// FailAttempt would.
func (s *Store) settleOne(txn *mdb.Txn, st *dedupe.Settlement) error {
	cur, err := s.ownedQueued(txn, st.Lease)
	if err != nil {
		return err
	}
	if err := s.unindex(txn, &cur); err != nil {
		return err
	}
	now := s.opts.Now()
	cur.Token, cur.LeaseUntil, cur.UpdatedAt, cur.Response = 0, time.Time{}, now, st.Response
	cur.Attempts++
	switch st.Outcome {
	case dedupe.SettleComplete:
		cur.State, cur.ExpiresAt = dedupe.Completed, now.Add(s.opts.Retention)
	case dedupe.SettleRetry:
		cur.Retries++
		cur.NextAttempt = st.Next
	case dedupe.SettleFail:
		cur.State, cur.ExpiresAt, cur.Reason = dedupe.Failed, now.Add(s.opts.Retention), dedupe.CutReason(st.Reason)
	default:
		return fmt.Errorf("dedupe: unknown settle outcome %d", st.Outcome)
	}
	return s.put(txn, &cur)
}

// ownedQueued is owned for a queued event's attempt.
func (s *Store) ownedQueued(txn *mdb.Txn, l dedupe.Lease) (dedupe.Record, error) {
	cur, err := s.owned(txn, l)
	if err != nil {
		return cur, err
	}
	if cur.State != dedupe.Queued {
		return dedupe.Record{}, dedupe.ErrLeaseLost
	}
	return cur, nil
}

// Requeue puts a FAILED queued event back to QUEUED, due now.
func (s *Store) Requeue(ctx context.Context, key string, maxAge time.Duration) (dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Record{}, err
	}
	var rec dedupe.Record
	err := s.update(ctx, func(txn *mdb.Txn) error {
		now := s.opts.Now()
		cur, err := s.get(txn, key, allBodies) // rewritten whole
		rec = cur                              // the op may run twice (writer.go)
		if err != nil {
			return err
		}
		if err := dedupe.CheckRequeue(&cur, now); err != nil {
			return err
		}
		if err := s.unindex(txn, &cur); err != nil {
			return err
		}
		cur.State, cur.Token, cur.LeaseUntil, cur.Retries, cur.Reason = dedupe.Queued, 0, time.Time{}, 0, ""
		cur.QueuedAt, cur.NextAttempt, cur.UpdatedAt = now, now, now
		cur.ExpiresAt = dedupe.QueuedExpiry(now, max(maxAge, 0), s.opts.Lease, s.opts.Retention)
		rec = cur
		return s.put(txn, &cur)
	})
	if err != nil && !dedupe.IsLogical(err) {
		return dedupe.Record{}, err
	}
	return rec, err
}

// QueueStats reads destination's depth entry and its first waiting entry.
func (s *Store) QueueStats(ctx context.Context, destination string) (dedupe.QueueStats, error) {
	if err := dedupe.CheckDestination(destination); err != nil {
		return dedupe.QueueStats{}, err
	}
	var st dedupe.QueueStats
	err := s.view(func(txn *mdb.Txn) error {
		n, err := readDepth(txn, s.meta, append([]byte(depthPrefix), destination...))
		if err != nil {
			return err
		}
		st.Depth = int(n)
		st.Oldest, _, err = s.first(txn, s.waiting, destination)
		return err
	})
	return st, err
}

// QueueDestinations reads the depth entries of dbiMeta, which are in
// destination order.
func (s *Store) QueueDestinations(ctx context.Context) ([]string, error) {
	var out []string
	err := s.view(func(txn *mdb.Txn) error {
		out = out[:0] // the view may run twice
		cur, err := txn.OpenCursor(s.meta)
		if err != nil {
			return err
		}
		defer cur.Close()
		prefix := []byte(depthPrefix)
		k, v, err := cur.Get(prefix, nil, mdb.SetRange)
		for ; err == nil && bytes.HasPrefix(k, prefix); k, v, err = cur.Get(nil, nil, mdb.Next) {
			if len(v) != 8 {
				return fmt.Errorf("%w: depth entry %q of %d bytes", dedupe.ErrCorrupt, k, len(v))
			}
			if binary.BigEndian.Uint64(v) > 0 {
				out = append(out, string(k[len(prefix):]))
			}
		}
		if err != nil && !mdb.IsNotFound(err) {
			return err
		}
		return nil
	})
	return out, err
}

// NextDue reads destination's first due entry.
func (s *Store) NextDue(ctx context.Context, destination string) (time.Time, bool, error) {
	if err := dedupe.CheckDestination(destination); err != nil {
		return time.Time{}, false, err
	}
	var (
		at time.Time
		ok bool
	)
	err := s.view(func(txn *mdb.Txn) error {
		var err error
		at, ok, err = s.first(txn, s.due, destination)
		return err
	})
	return at, ok, err
}

// first returns the time of destination's first entry in dbi.
func (s *Store) first(txn *mdb.Txn, dbi mdb.DBI, destination string) (time.Time, bool, error) {
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return time.Time{}, false, err
	}
	defer cur.Close()
	prefix := queuePrefix(destination)
	k, _, err := cur.Get(prefix, nil, mdb.SetRange)
	if mdb.IsNotFound(err) || err == nil && !bytes.HasPrefix(k, prefix) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	at, ok := splitQueueIndexKey(k, destination)
	if !ok {
		return time.Time{}, false, fmt.Errorf("%w: queue index entry %q", dedupe.ErrCorrupt, k)
	}
	return at, true, nil
}

// SetPaused writes or deletes destination's pause entry. Pausing a paused
// destination keeps the time it was first paused.
func (s *Store) SetPaused(ctx context.Context, destination string, paused bool) error {
	if err := dedupe.CheckDestination(destination); err != nil {
		return err
	}
	k := append([]byte(pausePrefix), destination...)
	return s.update(ctx, func(txn *mdb.Txn) error {
		_, err := getGuarded(txn, s.meta, k)
		switch {
		case paused && err == nil:
			return nil
		case paused && mdb.IsNotFound(err):
			return s.putKV(txn, s.meta, k, binary.BigEndian.AppendUint64(nil, uint64(s.opts.Now().UnixNano())))
		case !paused && err == nil:
			return s.delKV(txn, s.meta, k)
		case mdb.IsNotFound(err):
			return nil
		}
		return err
	})
}

// Paused reads every pause entry.
func (s *Store) Paused(ctx context.Context) (map[string]dedupe.Pause, error) {
	out := map[string]dedupe.Pause{}
	err := s.view(func(txn *mdb.Txn) error {
		clear(out)
		cur, err := txn.OpenCursor(s.meta)
		if err != nil {
			return err
		}
		defer cur.Close()
		prefix := []byte(pausePrefix)
		k, v, err := cur.Get(prefix, nil, mdb.SetRange)
		for ; err == nil && bytes.HasPrefix(k, prefix); k, v, err = cur.Get(nil, nil, mdb.Next) {
			if len(v) != 8 {
				return fmt.Errorf("%w: pause entry %q", dedupe.ErrCorrupt, k)
			}
			out[string(k[len(prefix):])] = dedupe.Pause{Paused: true, Since: fromUnixNano(int64(binary.BigEndian.Uint64(v)))}
		}
		if err != nil && !mdb.IsNotFound(err) {
			return err
		}
		return nil
	})
	return out, err
}
