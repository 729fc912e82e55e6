package dedupetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// QueueStore is a backend with the queue of store and forward, as every
// backend is: Run fails a store without it.
type QueueStore interface {
	dedupe.Store
	dedupe.Queue
}

// queueStore is s as a QueueStore, or the test's failure.
func queueStore(t *testing.T, s dedupe.Store) QueueStore {
	t.Helper()
	q, ok := s.(QueueStore)
	require.True(t, ok, "%T does not implement dedupe.Queue", s)
	return q
}

// ledgerKey is the store key of stripe's event for the destination
// "ledger".
func ledgerKey(event string) string {
	return dedupe.Key{Source: "stripe", Event: event, Destination: "ledger"}.String()
}

// queued is the enqueue the queue cases share: key (its destination's
// queue), with a whole request and a max_age of a day.
func queued(key string) dedupe.Enqueue {
	return dedupe.Enqueue{
		Key: key, Fingerprint: "fp-a", MaxAge: 24 * time.Hour,
		Request: dedupe.NewRequest("application/json", "invoice.paid", []byte(`{"id":"`+key+`"}`), true),
	}
}

// takeOne takes destination's due events and requires exactly one.
func takeOne(t *testing.T, q QueueStore, destination string) dedupe.Attempt {
	t.Helper()
	got, err := q.Take(context.Background(), destination, 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

func requireDepth(t *testing.T, q QueueStore, destination string, depth int, oldest time.Time) {
	t.Helper()
	st, err := q.QueueStats(context.Background(), destination)
	require.NoError(t, err)
	require.Equal(t, dedupe.QueueStats{Depth: depth, Oldest: oldest}, st)
}

// queueCases are the kit's cases of store and forward (dedupe.Queue).
func queueCases() []kitCase {
	ctx, _, _, ok := fixture()
	key := ledgerKey("evt_1")
	unavailable := dedupe.Response{Status: 503, ContentType: "text/plain", Body: []byte("down")}
	return []kitCase{
		{"queue: enqueue, a retry queues nothing new, mismatch refused", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			arrived := clock.Now()
			rec, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			require.Nil(t, rec, "new")
			clock.Advance(time.Second)
			rec, err = q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			require.NotNil(t, rec, "a gateway's retry is acknowledged again")
			require.Equal(t, dedupe.Queued, rec.State)
			other := queued(key)
			other.Fingerprint = "fp-b"
			_, err = q.Enqueue(ctx, other)
			require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch)

			got, err := q.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Queued, got.State)
			require.Equal(t, "ledger", got.Destination)
			require.Equal(t, arrived, got.QueuedAt)
			require.Equal(t, arrived, got.NextAttempt)
			require.Equal(t, queued(key).Request.Body, got.Request.Body)
			require.Zero(t, got.Attempts)
			require.Zero(t, got.Token)
			stats, err := q.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, map[dedupe.State]int{dedupe.Queued: 1}, stats)
			requireDepth(t, q, "ledger", 1, arrived)
			requireDepth(t, q, "billing", 0, time.Time{})

			// A sync claim or redrive of the key does not start a second
			// delivery beside the queued one.
			_, _, err = q.Claim(ctx, key, "fp-a", nil)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
			_, _, err = q.Redrive(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
		}},
		{"queue: the destinations with waiting events are listed", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			names, err := q.QueueDestinations(ctx)
			require.NoError(t, err)
			require.Empty(t, names, "no queue yet")
			audit := dedupe.Key{Source: "stripe", Event: "evt_2", Destination: "audit-2"}.String()
			for _, k := range []string{key, audit, dedupe.Key{Source: "stripe", Event: "evt_3", Destination: "audit-2"}.String()} {
				_, err := q.Enqueue(ctx, queued(k))
				require.NoError(t, err)
			}
			names, err = q.QueueDestinations(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"audit-2", "ledger"}, names, "sorted bytewise")

			// ledger's one event delivered: its queue is empty, and no
			// longer listed.
			require.NoError(t, q.Complete(ctx, takeOne(t, q, "ledger").Lease, ok))
			names, err = q.QueueDestinations(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{"audit-2"}, names)
		}},
		{"queue: bad input is refused and stores nothing", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			for name, mutate := range map[string]func(e *dedupe.Enqueue){
				"bad destination":   func(e *dedupe.Enqueue) { e.Key = "stripe:evt_1\x1fLedger" },
				"empty destination": func(e *dedupe.Enqueue) { e.Key = "stripe:evt_1\x1f" },
				"no request":        func(e *dedupe.Enqueue) { e.Request = nil },
				"body not kept":     func(e *dedupe.Enqueue) { e.Request = dedupe.NewRequest("application/json", "", []byte("{}"), false) },
				"empty key":         func(e *dedupe.Enqueue) { e.Key = "" },
			} {
				e := queued(key)
				mutate(&e)
				_, err := q.Enqueue(ctx, e)
				require.Error(t, err, name)
			}
			_, err := q.Get(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrNotFound)
			_, err = q.Take(ctx, "-x", 1)
			require.ErrorIs(t, err, dedupe.ErrInvalidDestination)
			requireDepth(t, q, "ledger", 0, time.Time{})
		}},
		{"queue: one attempt at a time; a lease that passes comes due again", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			arrived := clock.Now()
			_, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			a := takeOne(t, q, "ledger")
			require.Equal(t, key, a.Lease.Key)
			require.Equal(t, clock.Now().Add(time.Minute), a.Lease.Until)
			require.Equal(t, queued(key).Request.Body, a.Record.Request.Body, "the attempt has the whole request")
			again, err := q.Take(ctx, "ledger", 10)
			require.NoError(t, err)
			require.Empty(t, again, "never two attempts at once")
			requireDepth(t, q, "ledger", 0, time.Time{})
			rec, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			require.NotNil(t, rec, "a retry during the attempt is acknowledged again")

			clock.Advance(time.Minute) // the attempt's process died
			b := takeOne(t, q, "ledger")
			require.NotEqual(t, a.Lease.Token, b.Lease.Token)
			require.Equal(t, arrived, b.Record.QueuedAt)
			require.ErrorIs(t, q.Complete(ctx, a.Lease, ok), dedupe.ErrLeaseLost, "the lost attempt's answer")
			require.ErrorIs(t, q.Retry(ctx, a.Lease, clock.Now(), unavailable), dedupe.ErrLeaseLost)
			require.ErrorIs(t, q.FailAttempt(ctx, a.Lease, unavailable, "x"), dedupe.ErrLeaseLost)
			require.NoError(t, q.Complete(ctx, b.Lease, ok))
		}},
		{"queue: a 2xx completes; later deliveries queue nothing", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			_, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			a := takeOne(t, q, "ledger")
			require.NoError(t, q.Complete(ctx, a.Lease, ok))
			got, err := q.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, got.State)
			require.Equal(t, ok, got.Response)
			require.Equal(t, uint32(1), got.Attempts)
			require.Equal(t, clock.Now().Add(2*time.Hour), got.ExpiresAt)
			rec, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
			clock.Advance(time.Hour)
			none, err := q.Take(ctx, "ledger", 10)
			require.NoError(t, err)
			require.Empty(t, none)
			_, ok, err := q.NextDue(ctx, "ledger")
			require.NoError(t, err)
			require.False(t, ok)
			requireDepth(t, q, "ledger", 0, time.Time{})
		}},
		{"queue: retry waits for its due time, keeping the last answer", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			arrived := clock.Now()
			_, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			a := takeOne(t, q, "ledger")
			next := clock.Now().Add(2 * time.Second)
			require.NoError(t, q.Retry(ctx, a.Lease, next, unavailable))
			require.ErrorIs(t, q.Retry(ctx, a.Lease, next, unavailable), dedupe.ErrLeaseLost, "a second settle")
			requireDepth(t, q, "ledger", 1, arrived)
			due, found, err := q.NextDue(ctx, "ledger")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, next, due)
			none, err := q.Take(ctx, "ledger", 10)
			require.NoError(t, err)
			require.Empty(t, none, "not due yet")
			clock.Advance(2 * time.Second)
			b := takeOne(t, q, "ledger")
			require.Equal(t, uint32(1), b.Record.Retries)
			require.Equal(t, uint32(1), b.Record.Attempts)
			require.Equal(t, unavailable, b.Record.Response)
		}},
		{"queue: failed with a reason, redriven by Requeue", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			_, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			a := takeOne(t, q, "ledger")
			require.NoError(t, q.Retry(ctx, a.Lease, clock.Now(), unavailable))
			a = takeOne(t, q, "ledger")
			require.NoError(t, q.FailAttempt(ctx, a.Lease, unavailable, "max_age 24h passed"))
			got, err := q.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, got.State)
			require.Equal(t, "max_age 24h passed", got.Reason)
			require.Equal(t, unavailable, got.Response)
			require.Equal(t, uint32(2), got.Attempts)
			requireDepth(t, q, "ledger", 0, time.Time{})
			rec, err := q.Enqueue(ctx, queued(key))
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, rec.State, "a gateway retry is acknowledged, not queued again")

			clock.Advance(time.Hour)
			rec2, err := q.Requeue(ctx, key, 24*time.Hour)
			require.NoError(t, err)
			require.Equal(t, dedupe.Queued, rec2.State)
			require.Equal(t, clock.Now(), rec2.QueuedAt, "max_age counts from the redrive")
			requireDepth(t, q, "ledger", 1, clock.Now())
			_, err = q.Requeue(ctx, key, time.Hour)
			require.ErrorIs(t, err, dedupe.ErrNotQueueable, "queued already")
			b := takeOne(t, q, "ledger")
			require.Zero(t, b.Record.Retries, "the backoff starts afresh")
			require.Empty(t, b.Record.Reason)
			_, err = q.Requeue(ctx, key, time.Hour)
			require.ErrorIs(t, err, dedupe.ErrInFlight, "in an attempt")
			_, err = q.Requeue(ctx, "stripe:absent", time.Hour)
			require.ErrorIs(t, err, dedupe.ErrNotFound)

			l, _, err := q.Claim(ctx, "stripe:sync", "fp", dedupe.NewRequest("", "", []byte("{}"), true))
			require.NoError(t, err)
			require.NoError(t, q.Fail(ctx, l, dedupe.Response{Status: 400}))
			_, err = q.Requeue(ctx, "stripe:sync", time.Hour)
			require.ErrorIs(t, err, dedupe.ErrNotQueueable, "a sync record is redriven by Redrive")
		}},
		{"queue: settle ends several attempts at once, each as its own settle would", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			arrived := clock.Now()
			keys := []string{ledgerKey("evt_c"), ledgerKey("evt_r"), ledgerKey("evt_f"), ledgerKey("evt_lost")}
			for _, k := range keys {
				_, err := q.Enqueue(ctx, queued(k))
				require.NoError(t, err)
			}
			got, err := q.Take(ctx, "ledger", 10)
			require.NoError(t, err)
			require.Len(t, got, 4)
			leases := map[string]dedupe.Lease{}
			for _, a := range got {
				leases[a.Lease.Key] = a.Lease
			}
			lost := leases[keys[3]]
			require.NoError(t, q.Retry(ctx, lost, clock.Now().Add(time.Hour), unavailable), "settled before: the batch's lease is lost")
			next := clock.Now().Add(2 * time.Second)
			clock.Advance(time.Second)
			errs, err := q.Settle(ctx, []dedupe.Settlement{
				{Lease: leases[keys[0]], Outcome: dedupe.SettleComplete, Response: ok},
				{Lease: leases[keys[1]], Outcome: dedupe.SettleRetry, Response: unavailable, Next: next},
				{Lease: leases[keys[2]], Outcome: dedupe.SettleFail, Response: unavailable, Reason: "rejected"},
				{Lease: lost, Outcome: dedupe.SettleComplete, Response: ok},
			})
			require.NoError(t, err)
			require.Len(t, errs, 4)
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			require.NoError(t, errs[2])
			require.ErrorIs(t, errs[3], dedupe.ErrLeaseLost)

			c, err := q.Get(ctx, keys[0])
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, c.State)
			require.Equal(t, ok, c.Response)
			require.Equal(t, uint32(1), c.Attempts)
			require.Equal(t, clock.Now().Add(2*time.Hour), c.ExpiresAt)
			r, err := q.Get(ctx, keys[1])
			require.NoError(t, err)
			require.Equal(t, dedupe.Queued, r.State)
			require.Equal(t, next, r.NextAttempt)
			require.Equal(t, uint32(1), r.Retries)
			require.Equal(t, unavailable, r.Response)
			f, err := q.Get(ctx, keys[2])
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, f.State)
			require.Equal(t, "rejected", f.Reason)
			l, err := q.Get(ctx, keys[3])
			require.NoError(t, err)
			require.Equal(t, dedupe.Queued, l.State, "a lost lease changes nothing")
			require.Equal(t, clock.Now().Add(time.Hour-time.Second), l.NextAttempt)
			requireDepth(t, q, "ledger", 2, arrived)

			errs, err = q.Settle(ctx, nil)
			require.NoError(t, err)
			require.Empty(t, errs)
		}},
		{"queue: due order, limit and destinations apart", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			first := clock.Now()
			for i := range 3 {
				_, err := q.Enqueue(ctx, queued(ledgerKey(fmt.Sprintf("evt_%d", i))))
				require.NoError(t, err)
				clock.Advance(time.Second)
			}
			other := queued(dedupe.Key{Source: "stripe", Event: "evt_b", Destination: "billing"}.String())
			_, err := q.Enqueue(ctx, other)
			require.NoError(t, err)
			requireDepth(t, q, "ledger", 3, first)
			requireDepth(t, q, "billing", 1, clock.Now())
			got, err := q.Take(ctx, "ledger", 2)
			require.NoError(t, err)
			require.Len(t, got, 2)
			require.Equal(t, ledgerKey("evt_0"), got[0].Lease.Key)
			require.Equal(t, ledgerKey("evt_1"), got[1].Lease.Key)
			requireDepth(t, q, "ledger", 1, first.Add(2*time.Second))
			b := takeOne(t, q, "billing")
			require.Equal(t, other.Key, b.Lease.Key)
			require.Equal(t, ledgerKey("evt_2"), takeOne(t, q, "ledger").Lease.Key)
		}},
		{"queue: delete and prune keep the queue's counts", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			arrived := clock.Now()
			e := queued(key)
			e.MaxAge = time.Hour
			_, err := q.Enqueue(ctx, e)
			require.NoError(t, err)
			_, err = q.Enqueue(ctx, queued(ledgerKey("evt_2")))
			require.NoError(t, err)
			clock.Advance(3 * time.Hour)
			n, err := q.Prune(ctx, 100)
			require.NoError(t, err)
			require.Zero(t, n, "a queued event outlives its max_age, a lease and the retention")
			clock.Advance(2 * time.Minute)
			n, err = q.Prune(ctx, 100)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			requireDepth(t, q, "ledger", 1, arrived)
			require.NoError(t, q.Delete(ctx, ledgerKey("evt_2")))
			requireDepth(t, q, "ledger", 0, time.Time{})
			none, err := q.Take(ctx, "ledger", 10)
			require.NoError(t, err)
			require.Empty(t, none)
		}},
		{"queue: pause flags are stored", func(t *testing.T, s dedupe.Store, clock *Clock) {
			q := queueStore(t, s)
			p, err := q.Paused(ctx)
			require.NoError(t, err)
			require.Empty(t, p)
			since := clock.Now()
			require.NoError(t, q.SetPaused(ctx, "ledger", true))
			clock.Advance(time.Minute)
			require.NoError(t, q.SetPaused(ctx, "ledger", true))
			p, err = q.Paused(ctx)
			require.NoError(t, err)
			require.Equal(t, map[string]dedupe.Pause{"ledger": {Paused: true, Since: since}}, p, "a second pause keeps the first's time")
			require.NoError(t, q.SetPaused(ctx, "ledger", false))
			require.NoError(t, q.SetPaused(ctx, "billing", false))
			p, err = q.Paused(ctx)
			require.NoError(t, err)
			require.Empty(t, p)
			require.ErrorIs(t, q.SetPaused(ctx, "", true), dedupe.ErrInvalidDestination)
		}},
	}
}
