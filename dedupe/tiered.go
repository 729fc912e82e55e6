package dedupe

import (
	"context"
	"errors"
	"time"

	"github.com/PowerDNS/lmdb-go/lmdb"
)

// Tiered puts a node's LMDB store in front of the Postgres store its nodes
// share. Postgres decides every claim, so an event is forwarded at most once
// across the nodes; the finished records (COMPLETED, FAILED) are also kept
// in the node's LMDB, so that duplicates of them are replayed from there,
// also while Postgres is down. A new event needs Postgres: without it, Claim
// answers ErrUnavailable (503, and the provider retries).
//
// The local copies are a cache that never decides a claim: IN_FLIGHT
// records live in Postgres only. A copy expires with the shared record it
// copies and is pruned by the local store's own pruner.
//
// Every node gives the same answer: a copy is replayed only after one
// indexed read of the shared row's updated_at finds it unchanged, so a
// `keys delete` on any node (the row is gone) or a new claim or answer after
// it (updated_at moved: Postgres's clock, in microseconds, at each claim,
// takeover and finish) takes effect on every node at once; a node whose
// copy is stale drops it and claims in Postgres. The copy therefore no
// longer saves the round trip of a replay: it saves sending the stored body
// (up to MaxStoredBody) and decoding the row, and it keeps replays going
// while Postgres is unreachable, when the check cannot be made and the copy
// is answered as it is (a delete made during the outage reaches this node
// when Postgres does).
type Tiered struct {
	local  *Store
	shared *PGStore
}

// NewTiered returns the tiered store over local and shared. It takes both
// over: Close closes them.
func NewTiered(local *Store, shared *PGStore) *Tiered {
	return &Tiered{local: local, shared: shared}
}

// Close closes the shared store, then the local one.
func (t *Tiered) Close() error {
	return errors.Join(t.shared.Close(), t.local.Close())
}

// Lease returns the lease length claims are given (the shared store's).
func (t *Tiered) Lease() time.Duration { return t.shared.Lease() }

// Claim has Store.Claim's outcomes. A finished record in the local copy is
// answered from it when the shared row is unchanged (or Postgres cannot
// say); anything else is claimed in Postgres, and a finished record found
// there is copied locally for next time.
func (t *Tiered) Claim(ctx context.Context, key, fingerprint string) (Lease, *Record, error) {
	if err := checkPGKey(key); err != nil {
		return Lease{}, nil, err
	}
	rec, err := t.local.Get(ctx, key)
	switch {
	case err == nil && rec.State != InFlight:
		at, cerr := t.shared.updatedAt(ctx, key)
		if cerr == nil && at.Equal(rec.UpdatedAt) || cerr != nil && !errors.Is(cerr, ErrNotFound) {
			r, err := decide(&rec, fingerprint, t.shared.now())
			return Lease{}, r, err
		}
		// Deleted, claimed again or answered anew since the copy was
		// made, on some node: the copy is stale, and Postgres decides.
		if err := t.local.ForceDelete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
			t.local.logger.Warn("dedupe: could not drop a stale local copy", "key", key, "error", err.Error())
		}
	case err != nil && !errors.Is(err, ErrNotFound):
		// A local failure costs the shortcut only: Postgres decides.
		t.local.logger.Warn("dedupe: local copy unreadable; asking the shared store", "error", err.Error())
	}
	lease, r, err := t.shared.Claim(ctx, key, fingerprint)
	if err == nil && r != nil && r.State != InFlight {
		t.keep(ctx, *r)
	}
	return lease, r, err
}

// Complete records the delivered event in Postgres, then copies it locally.
func (t *Tiered) Complete(ctx context.Context, l Lease, resp Response) error {
	return t.finish(ctx, l, Completed, resp)
}

// Fail records the rejected event in Postgres, then copies it locally.
func (t *Tiered) Fail(ctx context.Context, l Lease, resp Response) error {
	return t.finish(ctx, l, Failed, resp)
}

// finish is one round trip to Postgres: the statement that records the
// answer returns the shared record, which is copied as it is (its times,
// attempts and fingerprint). The copy is not checked again afterwards, as
// keep does: a delete that slips in between leaves a copy that the check
// on every replay finds stale.
func (t *Tiered) finish(ctx context.Context, l Lease, st State, resp Response) error {
	rec, err := t.shared.finishRecord(ctx, l, st, resp)
	if err != nil {
		return err
	}
	if err := t.local.keep(ctx, rec); err != nil {
		t.local.logger.Warn("dedupe: could not keep a local copy of a finished record", "key", rec.Key, "error", err.Error())
	}
	return nil
}

// keep copies a finished record into the local store, best effort: a node
// without the copy only asks Postgres again.
//
// A `keys delete` between reading rec from Postgres and writing the copy
// would leave a copy of a deleted record, replayed until it expires; so the
// shared row is read again after the write, and the copy dropped when the
// row is gone or has changed. (If Postgres cannot answer, the copy stays:
// it was the shared record a moment ago.)
func (t *Tiered) keep(ctx context.Context, rec Record) {
	if err := t.local.keep(ctx, rec); err != nil {
		t.local.logger.Warn("dedupe: could not keep a local copy of a finished record", "key", rec.Key, "error", err.Error())
		return
	}
	cur, err := t.shared.Get(ctx, rec.Key)
	if err == nil && cur.UpdatedAt.Equal(rec.UpdatedAt) || err != nil && !errors.Is(err, ErrNotFound) {
		return
	}
	if err := t.local.ForceDelete(ctx, rec.Key); err != nil && !errors.Is(err, ErrNotFound) {
		t.local.logger.Warn("dedupe: could not drop the local copy of a record deleted meanwhile", "key", rec.Key, "error", err.Error())
	}
}

// Release deletes the caller's claim in Postgres.
func (t *Tiered) Release(ctx context.Context, l Lease) error { return t.shared.Release(ctx, l) }

// Get returns the shared record of key or, when the shared record is gone
// (deleted on another node, pruned), this node's copy, which it still holds
// (until its next claim of the key finds the copy stale and drops it) and
// would replay while Postgres is unreachable: `keys get` shows it and
// `keys delete` finds it.
func (t *Tiered) Get(ctx context.Context, key string) (Record, error) {
	rec, err := t.shared.Get(ctx, key)
	if !errors.Is(err, ErrNotFound) {
		return rec, err
	}
	if lrec, lerr := t.local.Get(ctx, key); lerr == nil || !errors.Is(lerr, ErrNotFound) {
		return lrec, lerr
	}
	return Record{}, err
}

// List lists the shared records.
func (t *Tiered) List(ctx context.Context, o ListOptions) ([]Record, error) {
	return t.shared.List(ctx, o)
}

// Stats counts the shared records by state.
func (t *Tiered) Stats(ctx context.Context) (map[State]int, error) { return t.shared.Stats(ctx) }

// Delete deletes key in Postgres (refusing a live claim), then this node's
// copy. Other nodes drop theirs when they next see the key: their check of
// the shared row finds it gone.
func (t *Tiered) Delete(ctx context.Context, key string) error {
	return t.delete(ctx, key, t.shared.Delete)
}

// ForceDelete deletes key whatever its state, in Postgres and locally.
func (t *Tiered) ForceDelete(ctx context.Context, key string) error {
	return t.delete(ctx, key, t.shared.ForceDelete)
}

func (t *Tiered) delete(ctx context.Context, key string, fn func(context.Context, string) error) error {
	serr := fn(ctx, key)
	if serr != nil && !errors.Is(serr, ErrNotFound) {
		return serr
	}
	lerr := t.local.ForceDelete(ctx, key)
	switch {
	case lerr != nil && !errors.Is(lerr, ErrNotFound):
		return lerr
	case serr != nil && lerr != nil:
		return serr // in neither
	}
	return nil
}

// Ping proves both stores writable: a node whose local disk is full can
// still claim, but not keep copies, and a node without Postgres cannot take
// new events.
func (t *Tiered) Ping(ctx context.Context) error {
	return errors.Join(t.shared.Ping(ctx), t.local.Ping(ctx))
}

// Prune prunes both stores and returns how many shared records it deleted.
func (t *Tiered) Prune(ctx context.Context, limit int) (int, error) {
	n, err := t.shared.Prune(ctx, limit)
	_, lerr := t.local.Prune(ctx, limit)
	return n, errors.Join(err, lerr)
}

// keep writes rec, a finished record copied from another store, as it is,
// unless the key holds a live claim of this store's own.
func (s *Store) keep(ctx context.Context, rec Record) error {
	if err := checkKey(rec.Key); err != nil {
		return err
	}
	return s.write(ctx, func(txn *lmdb.Txn) error {
		cur, err := s.get(txn, rec.Key)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil && !errors.Is(err, ErrCorrupt):
			return err
		case err == nil:
			if cur.State == InFlight && s.opts.Now().Before(cur.LeaseUntil) {
				return nil
			}
			if err := s.unindex(txn, &cur); err != nil {
				return err
			}
		}
		return s.put(txn, &rec)
	})
}
