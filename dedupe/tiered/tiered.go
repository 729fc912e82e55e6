package tiered

import (
	"context"
	"errors"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres"
)

// Store puts a node's LMDB store in front of the Postgres store its nodes
// share. Postgres decides every claim, so an event is forwarded at most once
// across the nodes; the finished records (COMPLETED, FAILED) are also kept
// in the node's LMDB, so that duplicates of them are replayed from there,
// also while Postgres is down. A new event needs Postgres: without it, Claim
// answers ErrUnavailable (503, and the provider retries).
//
// The local copies are a cache that never decides a claim: IN_FLIGHT
// records live in Postgres only. A copy holds what a replay answers with,
// not the stored request (Postgres sends none back to a claim or a
// finish); Get, Redrive and the console read the shared row. A copy expires with the shared record it
// copies and is pruned by the local store's own pruner.
//
// Every node gives the same answer: a copy is replayed only after a read
// of the shared row's updated_at finds it unchanged (postgres.Store.UpdatedAt,
// one statement for the duplicates waiting at once), so a
// `keys delete` on any node (the row is gone) or a new claim or answer after
// it (updated_at moved: Postgres's clock, in microseconds, at each claim,
// takeover and finish) takes effect on every node at once; a node whose
// copy is stale drops it and claims in Postgres. The copy therefore does
// not save the round trip of a replay: it saves sending the stored body
// (up to dedupe.MaxStoredBody) and decoding the row, and it keeps replays going
// while Postgres is unreachable, when the check cannot be made and the copy
// is answered as it is (a delete made during the outage reaches this node
// when Postgres does).
type Store struct {
	local  *lmdb.Store
	shared *postgres.Store
}

// New returns the tiered store over local and shared. It takes both
// over: Close closes them.
func New(local *lmdb.Store, shared *postgres.Store) *Store {
	return &Store{local: local, shared: shared}
}

// Close closes the shared store, then the local one.
func (t *Store) Close() error {
	return errors.Join(t.shared.Close(), t.local.Close())
}

// Lease returns the lease length claims are given (the shared store's).
func (t *Store) Lease() time.Duration { return t.shared.Lease() }

// Claim has Store.Claim's outcomes. A finished record in the local copy is
// answered from it when the shared row is unchanged (or Postgres cannot
// say); anything else is claimed in Postgres, and a finished record found
// there is copied locally for next time. req is kept with the claim in
// Postgres.
func (t *Store) Claim(ctx context.Context, key, fingerprint string, req *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	if err := dedupe.CheckKey(key); err != nil {
		return dedupe.Lease{}, nil, err
	}
	rec, err := t.local.Peek(ctx, key)
	switch {
	case err == nil && rec.State != dedupe.InFlight:
		at, cerr := t.shared.UpdatedAt(ctx, key)
		if cerr == nil && at.Equal(rec.UpdatedAt) || cerr != nil && !errors.Is(cerr, dedupe.ErrNotFound) {
			r, err := dedupe.Decide(&rec, fingerprint, t.shared.Now())
			return dedupe.Lease{}, r, err
		}
		// Deleted, claimed again or answered anew since the copy was
		// made, on some node: the copy is stale, and Postgres decides.
		if err := t.local.ForceDelete(ctx, key); err != nil && !errors.Is(err, dedupe.ErrNotFound) {
			t.local.Logger().Warn("dedupe: could not drop a stale local copy", "key", key, "error", err.Error())
		}
	case err != nil && !errors.Is(err, dedupe.ErrNotFound):
		// A local failure costs the shortcut only: Postgres decides.
		t.local.Logger().Warn("dedupe: local copy unreadable; asking the shared store", "error", err.Error())
	}
	lease, r, err := t.shared.Claim(ctx, key, fingerprint, req)
	if err == nil && r != nil && r.State != dedupe.InFlight {
		t.keep(ctx, *r)
	}
	return lease, r, err
}

// Complete records the delivered event in Postgres, then copies it locally.
func (t *Store) Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return t.finish(ctx, l, dedupe.Completed, resp)
}

// Fail records the rejected event in Postgres, then copies it locally.
func (t *Store) Fail(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return t.finish(ctx, l, dedupe.Failed, resp)
}

// finish is one round trip to Postgres: the statement that records the
// answer returns the shared record, which is copied as it is (its times,
// attempts and fingerprint). The copy is not checked again afterwards, as
// keep does: a delete that slips in between leaves a copy that the check
// on every replay finds stale.
//
// A copy is kept only once the shared write has answered: a caller that
// gave up (ctx ended) hears FinishRecord's error while the write may still
// land in Postgres, and then no copy is made; the next delivery of the key
// claims in Postgres and copies the finished row from there.
//
// The reply does not wait for the copy (KeepLater): the answer is durable
// in Postgres, and the copy is a cache, checked against the shared row
// before each replay, whose loss (not yet written, or undone by an
// operating-system crash) costs the next duplicate a claim in Postgres,
// which replays the answer and copies it then. A duplicate that arrives
// before the copy is written is answered so too.
func (t *Store) finish(ctx context.Context, l dedupe.Lease, st dedupe.State, resp dedupe.Response) error {
	rec, err := t.shared.FinishRecord(ctx, l, st, resp)
	if err != nil {
		return err
	}
	if err := t.local.KeepLater(rec); err != nil {
		t.local.Logger().Warn("dedupe: could not keep a local copy of a finished record", "key", rec.Key, "error", err.Error())
	}
	return nil
}

// keep copies a finished record into the local store, best effort: a node
// without the copy only asks Postgres again.
//
// A `keys delete` between reading rec from Postgres and writing the copy
// would leave a copy of a deleted record, replayed until it expires; so the
// shared row's updated_at is read again after the write (a check, as before
// a replay: not the row, whose request body may be a mebibyte), and the
// copy dropped when the row is gone or has changed. (If Postgres cannot
// answer, the copy stays: it was the shared record a moment ago.)
func (t *Store) keep(ctx context.Context, rec dedupe.Record) {
	if err := t.local.Keep(ctx, rec); err != nil {
		t.local.Logger().Warn("dedupe: could not keep a local copy of a finished record", "key", rec.Key, "error", err.Error())
		return
	}
	at, err := t.shared.UpdatedAt(ctx, rec.Key)
	if err == nil && at.Equal(rec.UpdatedAt) || err != nil && !errors.Is(err, dedupe.ErrNotFound) {
		return
	}
	if err := t.local.ForceDelete(ctx, rec.Key); err != nil && !errors.Is(err, dedupe.ErrNotFound) {
		t.local.Logger().Warn("dedupe: could not drop the local copy of a record deleted meanwhile", "key", rec.Key, "error", err.Error())
	}
}

// Release deletes the caller's claim in Postgres.
func (t *Store) Release(ctx context.Context, l dedupe.Lease) error { return t.shared.Release(ctx, l) }

// Get returns the shared record of key or, when the shared record is gone
// (deleted on another node, pruned), this node's copy, which it still holds
// (until its next claim of the key finds the copy stale and drops it) and
// would replay while Postgres is unreachable: `keys get` shows it and
// `keys delete` finds it.
func (t *Store) Get(ctx context.Context, key string) (dedupe.Record, error) {
	rec, err := t.shared.Get(ctx, key)
	if !errors.Is(err, dedupe.ErrNotFound) {
		return rec, err
	}
	if lrec, lerr := t.local.Get(ctx, key); lerr == nil || !errors.Is(lerr, dedupe.ErrNotFound) {
		return lrec, lerr
	}
	return dedupe.Record{}, err
}

// List lists the shared records.
func (t *Store) List(ctx context.Context, o dedupe.ListOptions) ([]dedupe.Record, error) {
	return t.shared.List(ctx, o)
}

// Recent lists the shared records, newest first.
func (t *Store) Recent(ctx context.Context, o dedupe.RecentOptions) ([]dedupe.Record, string, error) {
	return t.shared.Recent(ctx, o)
}

// Redrive leases the shared record for a redrive. The lease leaves the
// shared row's updated_at as it was, so every node's copy stays the one to
// replay until the redrive's answer is recorded (Complete or Fail, copied
// here as after any claim); that moves updated_at, and every node replays
// the new answer from then on: each checks the shared row before replaying
// its copy.
func (t *Store) Redrive(ctx context.Context, key string) (dedupe.Lease, dedupe.Record, error) {
	return t.shared.Redrive(ctx, key)
}

// Stats counts the shared records by state.
func (t *Store) Stats(ctx context.Context) (map[dedupe.State]int, error) { return t.shared.Stats(ctx) }

// Delete deletes key in Postgres (refusing a live claim), then this node's
// copy. Other nodes drop theirs when they next see the key: their check of
// the shared row finds it gone.
func (t *Store) Delete(ctx context.Context, key string) error {
	return t.delete(ctx, key, t.shared.Delete)
}

// ForceDelete deletes key whatever its state, in Postgres and locally.
func (t *Store) ForceDelete(ctx context.Context, key string) error {
	return t.delete(ctx, key, t.shared.ForceDelete)
}

func (t *Store) delete(ctx context.Context, key string, fn func(context.Context, string) error) error {
	serr := fn(ctx, key)
	if serr != nil && !errors.Is(serr, dedupe.ErrNotFound) {
		return serr
	}
	lerr := t.local.ForceDelete(ctx, key)
	switch {
	case lerr != nil && !errors.Is(lerr, dedupe.ErrNotFound):
		return lerr
	case serr != nil && lerr != nil:
		return serr // in neither
	}
	return nil
}

// Ping proves both stores writable: a node whose local disk is full can
// still claim, but not keep copies, and a node without Postgres cannot take
// new events.
func (t *Store) Ping(ctx context.Context) error {
	return errors.Join(t.shared.Ping(ctx), t.local.Ping(ctx))
}

// Prune prunes both stores and returns how many shared records it deleted.
func (t *Store) Prune(ctx context.Context, limit int) (int, error) {
	n, err := t.shared.Prune(ctx, limit)
	_, lerr := t.local.Prune(ctx, limit)
	return n, errors.Join(err, lerr)
}

// AppendRequests appends to the shared request log: one log for every node.
func (t *Store) AppendRequests(ctx context.Context, entries []dedupe.LoggedRequest, b dedupe.RequestLogBounds) error {
	return t.shared.AppendRequests(ctx, entries, b)
}

// ListRequests lists the shared request log.
func (t *Store) ListRequests(ctx context.Context, f dedupe.RequestFilter) ([]dedupe.LoggedRequest, string, error) {
	return t.shared.ListRequests(ctx, f)
}

// The queue of store and forward (dedupe.Queue) is the shared store's
// alone: a queued event must be delivered by any node, never by two at once
// (Postgres's row locks decide), and must survive the loss of the node
// that acknowledged it, so neither its record nor its lease may live in a
// node's LMDB. Only a finished event's copy is kept locally, as for a
// claim, so that a gateway's retry of it is answered by the local tier.

// Enqueue stores e in the shared store (dedupe.Queue.Enqueue).
func (t *Store) Enqueue(ctx context.Context, e dedupe.Enqueue) (*dedupe.Record, error) {
	return t.shared.Enqueue(ctx, e)
}

// Take leases due events from the shared store.
func (t *Store) Take(ctx context.Context, destination string, limit int) ([]dedupe.Attempt, error) {
	return t.shared.Take(ctx, destination, limit)
}

// Retry puts an attempt's event back to QUEUED in the shared store.
func (t *Store) Retry(ctx context.Context, l dedupe.Lease, next time.Time, resp dedupe.Response) error {
	return t.shared.Retry(ctx, l, next, resp)
}

// FailAttempt records an attempt's event FAILED in the shared store.
func (t *Store) FailAttempt(ctx context.Context, l dedupe.Lease, resp dedupe.Response, reason string) error {
	return t.shared.FailAttempt(ctx, l, resp, reason)
}

// Settle ends attempts in the shared store, each as Complete, Retry or
// FailAttempt does here (a completion copied locally), all at once, so
// that they ride one of the shared store's batches (dedupe.SettleEach).
func (t *Store) Settle(ctx context.Context, settlements []dedupe.Settlement) ([]error, error) {
	return dedupe.SettleEach(ctx, t, settlements)
}

// Requeue puts a FAILED queued event back to QUEUED in the shared store,
// and drops the local copy of the finished record it was.
func (t *Store) Requeue(ctx context.Context, key string, maxAge time.Duration) (dedupe.Record, error) {
	rec, err := t.shared.Requeue(ctx, key, maxAge)
	if err != nil {
		return rec, err
	}
	if lerr := t.local.ForceDelete(ctx, key); lerr != nil && !errors.Is(lerr, dedupe.ErrNotFound) {
		t.local.Logger().Warn("dedupe: could not drop the local copy of a requeued record", "key", key, "error", lerr.Error())
	}
	return rec, nil
}

// QueueStats reads the shared store's queue.
func (t *Store) QueueStats(ctx context.Context, destination string) (dedupe.QueueStats, error) {
	return t.shared.QueueStats(ctx, destination)
}

// NextDue reads the shared store's queue.
func (t *Store) NextDue(ctx context.Context, destination string) (time.Time, bool, error) {
	return t.shared.NextDue(ctx, destination)
}

// SetPaused stores a pause flag in the shared store, where every node
// reads it.
func (t *Store) SetPaused(ctx context.Context, destination string, paused bool) error {
	return t.shared.SetPaused(ctx, destination, paused)
}

// Paused reads the shared store's pause flags.
func (t *Store) Paused(ctx context.Context) (map[string]dedupe.Pause, error) {
	return t.shared.Paused(ctx)
}
