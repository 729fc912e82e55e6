package lmdb

import (
	"bytes"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// bodyOf is a request of n bytes, whole.
func bodyOf(n int, b byte) *dedupe.Request {
	return &dedupe.Request{ContentType: "application/json", EventType: "payment_intent.succeeded", Body: bytes.Repeat([]byte{b}, n), Size: n}
}

// rawValues returns key's value in records and its body, whatever its
// creation time (nil when absent).
func rawValues(t *testing.T, s *Store, key string) (rec, body []byte) {
	t.Helper()
	require.NoError(t, s.view(func(txn *mdb.Txn) error {
		if v, err := txn.Get(s.records, []byte(key)); err == nil {
			rec = v
		} else if !mdb.IsNotFound(err) {
			return err
		}
		cur, err := txn.OpenCursor(s.bodies)
		if err != nil {
			return err
		}
		defer cur.Close()
		for k, v, err := cur.Get(nil, nil, mdb.First); err == nil; k, v, err = cur.Get(nil, nil, mdb.Next) {
			if _, bk, ok := splitExpiryKey(k); ok && bk == key {
				body = v
			}
		}
		return nil
	}))
	return rec, body
}

// bodyEntries counts dbiBodies' entries.
func bodyEntries(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.view(func(txn *mdb.Txn) error {
		st, err := txn.Stat(s.bodies)
		n = int(st.Entries)
		return err
	}))
	return n
}

// A record's request body is written once, beside it, when the record is
// created: the record itself stays small through every transition (what
// keeps a commit's pages few), Get and the queue's Take read the body,
// Peek and the listings do not, and every way a record leaves the store
// takes its body with it.
func TestRequestBodyKeptApart(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	req := bodyOf(2200, 'a')

	l, _, err := s.Claim(ctx, "stripe:evt_1", "fp", req)
	require.NoError(t, err)
	rv, bv := rawValues(t, s, "stripe:evt_1")
	require.Less(t, len(rv), 200, "the record does not carry the body")
	require.Equal(t, req.Body, bv)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: []byte("ok")}))
	rv, bv = rawValues(t, s, "stripe:evt_1")
	require.Less(t, len(rv), 200)
	require.Equal(t, req.Body, bv)

	got, err := s.Get(ctx, "stripe:evt_1")
	require.NoError(t, err)
	require.Equal(t, req.Body, got.Request.Body)
	require.False(t, got.Request.Unread)
	got, err = s.Peek(ctx, "stripe:evt_1")
	require.NoError(t, err)
	require.Nil(t, got.Request.Body)
	require.True(t, got.Request.Unread)
	require.Equal(t, []byte("ok"), got.Response.Body)
	recs, err := s.List(ctx, dedupe.ListOptions{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.True(t, recs[0].Request.Unread)

	// A redrive forwards the body and keeps it where it is.
	rl, rr, err := s.Redrive(ctx, "stripe:evt_1")
	require.NoError(t, err)
	require.Equal(t, req.Body, rr.Request.Body)
	require.NoError(t, s.Complete(ctx, rl, dedupe.Response{Status: 200}))
	got, err = s.Get(ctx, "stripe:evt_1")
	require.NoError(t, err)
	require.Equal(t, req.Body, got.Request.Body)

	// The queue: enqueue, lease, retry, lease, settle.
	const qk = "stripe:evt_q\x1fledger"
	_, err = s.Enqueue(ctx, dedupe.Enqueue{Key: qk, Fingerprint: "fp", Request: bodyOf(3000, 'q'), MaxAge: time.Hour})
	require.NoError(t, err)
	taken, err := s.Take(ctx, "ledger", 10)
	require.NoError(t, err)
	require.Len(t, taken, 1)
	require.Equal(t, bytes.Repeat([]byte{'q'}, 3000), taken[0].Record.Request.Body)
	require.NoError(t, s.Retry(ctx, taken[0].Lease, c.Now(), dedupe.Response{Status: 503}))
	taken, err = s.Take(ctx, "ledger", 10)
	require.NoError(t, err)
	require.Len(t, taken, 1)
	require.Equal(t, bytes.Repeat([]byte{'q'}, 3000), taken[0].Record.Request.Body)
	errs, err := s.Settle(ctx, []dedupe.Settlement{{Lease: taken[0].Lease, Outcome: dedupe.SettleFail, Response: dedupe.Response{Status: 422}, Reason: "rejected"}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	rq, err := s.Requeue(ctx, qk, time.Hour)
	require.NoError(t, err)
	require.Equal(t, bytes.Repeat([]byte{'q'}, 3000), rq.Request.Body)
	rv, _ = rawValues(t, s, qk)
	require.Less(t, len(rv), 200)

	// A claim of an abandoned key keeps the new claim's request, or none.
	l, _, err = s.Claim(ctx, "stripe:evt_2", "fp", bodyOf(100, 'x'))
	require.NoError(t, err)
	c.Advance(2 * time.Minute) // past the lease
	_, _, err = s.Claim(ctx, "stripe:evt_2", "fp", bodyOf(120, 'y'))
	require.NoError(t, err)
	_, bv = rawValues(t, s, "stripe:evt_2")
	require.Equal(t, bytes.Repeat([]byte{'y'}, 120), bv)
	c.Advance(2 * time.Minute)
	_, _, err = s.Claim(ctx, "stripe:evt_2", "fp", dedupe.NewRequest("application/json", "", []byte("{}"), false))
	require.NoError(t, err)
	_, bv = rawValues(t, s, "stripe:evt_2")
	require.Nil(t, bv, "a body not kept leaves none behind")
	require.ErrorIs(t, s.Complete(ctx, l, dedupe.Response{Status: 200}), dedupe.ErrLeaseLost)

	// Release, delete, force delete and the pruner take the body along.
	l, _, err = s.Claim(ctx, "stripe:evt_3", "fp", bodyOf(10, 'r'))
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, l))
	require.NoError(t, s.Delete(ctx, "stripe:evt_1"))
	l, _, err = s.Claim(ctx, "stripe:evt_4", "fp", bodyOf(10, 'f'))
	require.NoError(t, err)
	require.NoError(t, s.ForceDelete(ctx, "stripe:evt_4"))
	require.Equal(t, 1, bodyEntries(t, s), "only the queued event's")
	c.Advance(48 * time.Hour)
	n, err := s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Zero(t, bodyEntries(t, s))
}

// A store written before bodies were kept apart (v3 records, their
// bodies inline, no bodies DBI entries) opens as it is, with no pass over
// it: its records read with their bodies, go through every transition in
// their own layout, and are pruned; new records beside them keep their
// bodies apart; Check finds the mix sound.
func TestOpenStoreWithBodiesInline(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := openTest(t, dir, c)
	now := c.Now()
	const token = 77
	body := func(b byte) []byte { return bytes.Repeat([]byte{b}, 2200) }
	req := func(b byte) *dedupe.Request {
		return &dedupe.Request{ContentType: "application/json", EventType: "charge", Body: body(b), Size: 2200}
	}
	old := []dedupe.Record{
		{Key: "stripe:claimed", State: dedupe.InFlight, Token: token, LeaseUntil: now.Add(time.Minute), Attempts: 1,
			CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour), Fingerprint: "fp", Request: req('c')},
		{Key: "stripe:done", State: dedupe.Completed, Attempts: 1, CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(time.Hour), Fingerprint: "fp", Response: dedupe.Response{Status: 200, Body: []byte("ok")}, Request: req('d')},
		{Key: "stripe:queued\x1fledger", State: dedupe.Queued, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour),
			Fingerprint: "fp", Request: req('q'), Destination: "ledger", QueuedAt: now, NextAttempt: now},
	}
	require.NoError(t, s.update(ctx, func(txn *mdb.Txn) error {
		for i := range old {
			if err := s.put(txn, &old[i]); err != nil {
				return err
			}
			v3 := encodeRecord(nil, &old[i], false)
			v3[0] = recordVersion3
			if err := txn.Put(s.records, []byte(old[i].Key), v3, 0); err != nil {
				return err
			}
			if err := txn.Del(s.bodies, bodyKey(nil, old[i].CreatedAt, old[i].Key), nil); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Zero(t, bodyEntries(t, s))
	require.NoError(t, s.Close())

	s = openTest(t, dir, c)
	for _, r := range old {
		got, err := s.Get(ctx, r.Key)
		require.NoError(t, err)
		require.Equal(t, r.Request.Body, got.Request.Body, r.Key)
		got, err = s.Peek(ctx, r.Key)
		require.NoError(t, err)
		require.True(t, got.Request.Unread)
	}
	require.NoError(t, s.Complete(ctx, dedupe.Lease{Key: "stripe:claimed", Token: token}, dedupe.Response{Status: 201}))
	taken, err := s.Take(ctx, "ledger", 10)
	require.NoError(t, err)
	require.Len(t, taken, 1)
	require.Equal(t, body('q'), taken[0].Record.Request.Body)
	errs, err := s.Settle(ctx, []dedupe.Settlement{{Lease: taken[0].Lease, Outcome: dedupe.SettleComplete, Response: dedupe.Response{Status: 200}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	rl, rr, err := s.Redrive(ctx, "stripe:done")
	require.NoError(t, err)
	require.Equal(t, body('d'), rr.Request.Body)
	require.NoError(t, s.Complete(ctx, rl, dedupe.Response{Status: 200}))
	for _, r := range old {
		got, err := s.Get(ctx, r.Key)
		require.NoError(t, err)
		require.Equal(t, dedupe.Completed, got.State, r.Key)
		require.Equal(t, r.Request.Body, got.Request.Body, "%s keeps its body through its transitions", r.Key)
		rv, _ := rawValues(t, s, r.Key)
		require.Greater(t, len(rv), 2200, "%s is rewritten in its own layout", r.Key)
	}
	require.Zero(t, bodyEntries(t, s))
	l, _, err := s.Claim(ctx, "stripe:new", "fp", req('n'))
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	require.Equal(t, 1, bodyEntries(t, s))
	require.NoError(t, s.Close())
	r, err := Check(dir)
	require.NoError(t, err)
	require.False(t, r.Damaged(), "%+v", r.Damage)
	require.Equal(t, 1, r.Bodies)

	s = openTest(t, dir, c)
	c.Advance(48 * time.Hour)
	n, err := s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Zero(t, bodyEntries(t, s))
	recs, err := s.List(ctx, dedupe.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, recs)
}

// rawBodies runs fn on dir's bodies DBI through an environment of its
// own, as damage or an operator's tool would change it.
func rawBodies(t *testing.T, dir string, fn func(txn *mdb.Txn, bodies mdb.DBI) error) {
	t.Helper()
	env, err := mdb.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	require.NoError(t, env.SetMaxDBs(maxDBs))
	require.NoError(t, env.Open(dir, 0, 0o640))
	require.NoError(t, env.Update(func(txn *mdb.Txn) error {
		bodies, err := txn.OpenDBI(dbiBodies, 0)
		if err != nil {
			return err
		}
		return fn(txn, bodies)
	}))
}

// TestCheckFindsBodyDamage: a record without its body, or with one of
// another size, and a body without a record that keeps it apart (at its
// creation time) are each reported with their key; Get answers the first
// as corrupt, and a forced delete of the key removes an orphan body.
func TestCheckFindsBodyDamage(t *testing.T) {
	const bad = "stripe:evt_damaged"
	// newClock's time: every record of the test is created at it.
	at := newClock().Now()
	tests := []struct {
		name   string
		damage func(txn *mdb.Txn, bodies mdb.DBI) error
		kind   string
		key    string
	}{
		{"body lost", func(txn *mdb.Txn, bodies mdb.DBI) error {
			return txn.Del(bodies, bodyKey(nil, at, bad), nil)
		}, DamageBodyMissing, bad},
		{"body cut short", func(txn *mdb.Txn, bodies mdb.DBI) error {
			return txn.Put(bodies, bodyKey(nil, at, bad), []byte("{}"), 0)
		}, DamageBodyMissing, bad},
		{"body without a record", func(txn *mdb.Txn, bodies mdb.DBI) error {
			return txn.Put(bodies, bodyKey(nil, at, "stripe:evt_gone"), []byte("{}"), 0)
		}, DamageBodyOrphan, "stripe:evt_gone"},
		{"body beside a record without one apart", func(txn *mdb.Txn, bodies mdb.DBI) error {
			return txn.Put(bodies, bodyKey(nil, at, "stripe:evt_a"), []byte("{}"), 0)
		}, DamageBodyOrphan, "stripe:evt_a"},
		{"body of a record created at another time", func(txn *mdb.Txn, bodies mdb.DBI) error {
			return txn.Put(bodies, bodyKey(nil, at.Add(time.Second), bad), []byte("{}"), 0)
		}, DamageBodyOrphan, bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, newClock())
			seedKeys(t, s, "stripe:evt_a", "stripe:evt_z")
			l, _, err := s.Claim(ctx, bad, "fp", bodyOf(300, 'b'))
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
			require.NoError(t, s.Close())
			r, err := Check(dir)
			require.NoError(t, err)
			require.False(t, r.Damaged(), "%+v", r.Damage)
			require.Equal(t, 1, r.Bodies)

			rawBodies(t, dir, tt.damage)
			r, err = Check(dir)
			require.NoError(t, err)
			require.Len(t, r.Damage, 1, "%+v", r.Damage)
			d := r.Damage[0]
			require.Equal(t, tt.kind, d.Kind)
			require.Equal(t, 1, d.Count)
			require.Contains(t, d.Examples[0], `"`+tt.key+`"`)
			require.Equal(t, 3, r.Records)

			s = openTest(t, dir, newClock())
			if tt.kind == DamageBodyMissing {
				_, err := s.Get(ctx, bad)
				require.ErrorIs(t, err, dedupe.ErrCorrupt)
				_, err = s.Peek(ctx, bad)
				require.NoError(t, err, "a replay reads no request body")
			}
			require.NoError(t, s.ForceDelete(ctx, tt.key))
			require.NoError(t, s.Close())
			r, err = Check(dir)
			require.NoError(t, err)
			require.False(t, r.Damaged(), "%+v", r.Damage)
		})
	}
}
