package lmdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
)

var _ dedupe.Queue = (*Store)(nil)

func TestRecordQueueFieldsRoundTrip(t *testing.T) {
	at := time.Unix(7, 0).UTC()
	r := dedupe.Record{Key: "k", State: dedupe.Queued, Token: 9, LeaseUntil: at, CreatedAt: at, Fingerprint: "fp",
		Request:     &dedupe.Request{ContentType: "application/json", Body: []byte("{}"), Size: 2},
		Destination: "ledger", QueuedAt: at, NextAttempt: at.Add(time.Second), Retries: 3, Reason: "max_age passed"}
	got, err := decodeRecord("k", encodeRecord(nil, &r), allBodies)
	require.NoError(t, err)
	require.Equal(t, r, got)
	buf := encodeRecord(nil, &r)
	_, err = decodeRecord("k", buf[:len(buf)-3], allBodies)
	require.ErrorIs(t, err, dedupe.ErrCorrupt, "a reason cut short")
}

// A store written before the queue (v2 records, a counts entry of three
// states) opens as it is: its records read as before, and the counts are
// recounted with QUEUED.
func TestOpenStoreWrittenBeforeTheQueue(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := dedupe.Record{Key: "stripe:old", State: dedupe.Completed, Attempts: 1, CreatedAt: at, UpdatedAt: at,
		ExpiresAt: at.Add(time.Hour), Fingerprint: "fp", Response: dedupe.Response{Status: 200},
		Request: &dedupe.Request{ContentType: "application/json", Body: []byte("{}"), Size: 2}}
	require.NoError(t, s.update(ctx, func(txn *mdb.Txn) error {
		if err := s.put(txn, &rec); err != nil {
			return err
		}
		v2 := encodeV2(nil, &rec)
		v2[0] = recordVersion2
		if err := txn.Put(s.records, []byte(rec.Key), v2, 0); err != nil {
			return err
		}
		var old [3 * 8]byte
		old[15] = 1 // one COMPLETED
		return txn.Put(s.meta, countsKey, old[:], 0)
	}))
	require.NoError(t, s.Close())

	s, err = Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Get(ctx, rec.Key)
	require.NoError(t, err)
	require.Equal(t, rec, got)
	stats, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 1}, stats)
	_, err = s.Enqueue(ctx, dedupe.Enqueue{Key: "stripe:new\x1fledger", Fingerprint: "fp", MaxAge: time.Hour,
		Request: dedupe.NewRequest("application/json", "", []byte("{}"), true)})
	require.NoError(t, err)
	stats, err = s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.Completed: 1, dedupe.Queued: 1}, stats)
	report, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, report.Damage)
}

// A delivery pass reads the due index's entries that are due, not the
// queue: with 5,000 events queued for later, taking the one due reads a
// handful of pages.
func TestTakeCostsTheDueEvents(t *testing.T) {
	clock := dedupetest.NewClock()
	s, err := Open(t.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1, Now: clock.Now}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	enqueue := func(key string) {
		_, err := s.Enqueue(ctx, dedupe.Enqueue{Key: key + "\x1fledger", Fingerprint: "fp", MaxAge: time.Hour,
			Request: dedupe.NewRequest("application/json", "", []byte("{}"), true)})
		require.NoError(t, err)
	}
	enqueue("stripe:due")
	clock.Advance(time.Second)
	for i := range 5000 {
		enqueue(fmt.Sprintf("stripe:later_%d", i))
	}
	clock.Advance(-time.Second)
	before := s.dueRead.Load()
	got, err := s.Take(ctx, "ledger", 100)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "stripe:due\x1fledger", got[0].Lease.Key)
	require.LessOrEqual(t, s.dueRead.Load()-before, uint64(2), "index entries read by the pass")
}

// A lease changes a queued record, its due entry and its waiting entry
// with the depth, nothing else: a delivery pass writes five entries for
// each event it takes (the record; the due entry, moved; the waiting entry
// and the depth it counted), not every index of the record again. Its
// record and indexes stay what Check expects.
func TestTakeWritesOnlyWhatALeaseChanges(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	for _, k := range []string{"stripe:a\x1fledger", "stripe:b\x1fledger"} {
		_, err := s.Enqueue(ctx, dedupe.Enqueue{Key: k, Fingerprint: "fp", MaxAge: time.Hour,
			Request: dedupe.NewRequest("application/json", "", []byte("{}"), true)})
		require.NoError(t, err)
	}
	var before, after uint64
	require.NoError(t, s.update(ctx, func(*mdb.Txn) error { before = s.changes; return nil }))
	got, err := s.Take(ctx, "ledger", 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.NoError(t, s.update(ctx, func(*mdb.Txn) error { after = s.changes; return nil }))
	require.Equal(t, uint64(2*5), after-before, "writes for two leases")
	st, err := s.QueueStats(ctx, "ledger")
	require.NoError(t, err)
	require.Zero(t, st.Depth, "both in an attempt")
	stats, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, stats[dedupe.Queued])
	require.NoError(t, s.Close())
	report, err := Check(dir)
	require.NoError(t, err)
	require.False(t, report.Damaged(), "%+v", report)
}
