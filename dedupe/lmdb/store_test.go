package lmdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func openTest(t *testing.T, dir string, c *clock, mut ...func(*Options)) *Store {
	t.Helper()
	o := Options{Options: dedupe.Options{Lease: time.Minute, Retention: time.Hour, AbandonAfter: time.Hour, Now: c.Now, PruneInterval: -1}}
	for _, m := range mut {
		m(&o)
	}
	s, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

var ctx = context.Background()

func TestStateMachine(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	const key = "stripe:evt_1"

	lease, rec, err := s.Claim(ctx, key, "fp1", nil)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.Equal(t, key, lease.Key)
	require.NotZero(t, lease.Token)
	require.Equal(t, c.Now().Add(time.Minute), lease.Until)

	// A concurrent duplicate is told who holds it and until when.
	_, rec, err = s.Claim(ctx, key, "fp1", nil)
	require.ErrorIs(t, err, dedupe.ErrInFlight)
	require.Equal(t, lease.Until, rec.LeaseUntil)

	// A different payload under the same key is refused before anything else.
	_, _, err = s.Claim(ctx, key, "fp2", nil)
	require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch)

	resp := dedupe.Response{Status: 201, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	require.NoError(t, s.Complete(ctx, lease, resp))
	require.ErrorIs(t, s.Complete(ctx, lease, resp), dedupe.ErrLeaseLost, "a finished lease cannot finish twice")

	_, rec, err = s.Claim(ctx, key, "fp1", nil)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)
	require.Equal(t, resp, rec.Response)

	_, _, err = s.Claim(ctx, key, "fp2", nil)
	require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch)

	got, err := s.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, got.State)
	require.Equal(t, uint32(1), got.Attempts)
	require.Equal(t, c.Now().Add(time.Hour), got.ExpiresAt)
}

func TestFailAndRelease(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)

	l, _, err := s.Claim(ctx, "x:failed", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 422, Body: []byte("no")}))
	_, rec, err := s.Claim(ctx, "x:failed", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, dedupe.Failed, rec.State)
	require.Equal(t, 422, rec.Response.Status)

	l, _, err = s.Claim(ctx, "x:released", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, l))
	_, err = s.Get(ctx, "x:released")
	require.ErrorIs(t, err, dedupe.ErrNotFound)
	l2, rec, err := s.Claim(ctx, "x:released", "other-fp", nil)
	require.NoError(t, err, "a released key is free, whatever the payload")
	require.Nil(t, rec)
	require.NotEqual(t, l.Token, l2.Token)
	require.ErrorIs(t, s.Release(ctx, l), dedupe.ErrLeaseLost)
}

func TestLeaseTakeoverAndLateFinisher(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	const key = "stripe:evt_takeover"

	first, _, err := s.Claim(ctx, key, "fp", nil)
	require.NoError(t, err)
	c.Advance(59 * time.Second)
	_, _, err = s.Claim(ctx, key, "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrInFlight)

	c.Advance(2 * time.Second)
	second, rec, err := s.Claim(ctx, key, "fp", nil)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.NotEqual(t, first.Token, second.Token)

	// The crashed-and-revived first attempt cannot overwrite the new owner.
	require.ErrorIs(t, s.Complete(ctx, first, dedupe.Response{Status: 200}), dedupe.ErrLeaseLost)
	require.ErrorIs(t, s.Fail(ctx, first, dedupe.Response{Status: 400}), dedupe.ErrLeaseLost)
	require.ErrorIs(t, s.Release(ctx, first), dedupe.ErrLeaseLost)
	got, err := s.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, dedupe.InFlight, got.State)
	require.Equal(t, second.Token, got.Token)
	require.Equal(t, uint32(2), got.Attempts)

	require.NoError(t, s.Complete(ctx, second, dedupe.Response{Status: 200}))
}

func TestDurableAcrossReopen(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	s := openTest(t, dir, c)
	l, _, err := s.Claim(ctx, "stripe:done", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: []byte("ok")}))
	crashed, _, err := s.Claim(ctx, "stripe:crashed", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openTest(t, dir, c)
	_, rec, err := s.Claim(ctx, "stripe:done", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, []byte("ok"), rec.Response.Body)
	_, _, err = s.Claim(ctx, "stripe:crashed", "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrInFlight, "a crashed attempt's lease survives the restart")
	c.Advance(time.Minute)
	l, _, err = s.Claim(ctx, "stripe:crashed", "fp", nil)
	require.NoError(t, err)
	require.NotEqual(t, crashed.Token, l.Token)
}

func TestConcurrentClaimsOneWinner(t *testing.T) {
	for _, batch := range []int{1, DefaultMaxBatch} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			s := openTest(t, t.TempDir(), newClock(), func(o *Options) { o.MaxBatch = batch })
			var wins, inflight atomic.Int32
			var wg sync.WaitGroup
			for i := 0; i < 50; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, err := s.Claim(ctx, "stripe:storm", "fp", nil)
					switch {
					case err == nil:
						wins.Add(1)
					case errors.Is(err, dedupe.ErrInFlight):
						inflight.Add(1)
					default:
						t.Errorf("claim: %v", err)
					}
				}()
			}
			wg.Wait()
			require.EqualValues(t, 1, wins.Load())
			require.EqualValues(t, 49, inflight.Load())
		})
	}
}

func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	// Many concurrent writers, half of them doomed (stale tokens): every
	// valid write must land, every doomed one must fail alone.
	const n = 64
	leases := make([]dedupe.Lease, n)
	for i := range leases {
		l, _, err := s.Claim(ctx, fmt.Sprintf("k:%03d", i), "fp", nil)
		require.NoError(t, err)
		leases[i] = l
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range leases {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := leases[i]
			if i%2 == 1 {
				l.Token++ // not the owner
			}
			errs[i] = s.Complete(ctx, l, dedupe.Response{Status: 200})
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		rec, gerr := s.Get(ctx, leases[i].Key)
		require.NoError(t, gerr)
		if i%2 == 1 {
			require.ErrorIs(t, err, dedupe.ErrLeaseLost)
			require.Equal(t, dedupe.InFlight, rec.State)
		} else {
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
		}
	}
}

func TestKeysAndBodies(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	for _, key := range []string{"", "k:" + string(bytes.Repeat([]byte("k"), dedupe.MaxKeyLen-1))} {
		_, _, err := s.Claim(ctx, key, "fp", nil)
		require.ErrorIs(t, err, dedupe.ErrInvalidKey)
	}
	long := "k:" + string(bytes.Repeat([]byte("k"), dedupe.MaxKeyLen-2))
	l, _, err := s.Claim(ctx, long, "fp", nil)
	require.NoError(t, err)
	big := bytes.Repeat([]byte("b"), dedupe.MaxStoredBody+100)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: big}))
	rec, err := s.Get(ctx, long)
	require.NoError(t, err)
	require.Len(t, rec.Response.Body, dedupe.MaxStoredBody)
}

func TestListAndDelete(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	for _, k := range []string{"stripe:a", "stripe:b", "xendit:a", "midtrans:a"} {
		l, _, err := s.Claim(ctx, k, "fp", nil)
		require.NoError(t, err)
		if k != "stripe:b" {
			require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
		}
	}
	keys := func(recs []dedupe.Record) (out []string) {
		for _, r := range recs {
			out = append(out, r.Key)
		}
		return out
	}
	tests := []struct {
		opts dedupe.ListOptions
		want []string
	}{
		{dedupe.ListOptions{}, []string{"midtrans:a", "stripe:a", "stripe:b", "xendit:a"}},
		{dedupe.ListOptions{Prefix: "stripe:"}, []string{"stripe:a", "stripe:b"}},
		{dedupe.ListOptions{State: dedupe.InFlight}, []string{"stripe:b"}},
		{dedupe.ListOptions{Prefix: "stripe:", State: dedupe.Completed}, []string{"stripe:a"}},
		{dedupe.ListOptions{Limit: 2}, []string{"midtrans:a", "stripe:a"}},
		{dedupe.ListOptions{After: "stripe:a", Limit: 2}, []string{"stripe:b", "xendit:a"}},
		{dedupe.ListOptions{Prefix: "nope:"}, nil},
	}
	for _, tt := range tests {
		got, err := s.List(ctx, tt.opts)
		require.NoError(t, err)
		require.Equal(t, tt.want, keys(got), "%+v", tt.opts)
	}
	require.NoError(t, s.Delete(ctx, "stripe:a"))
	require.ErrorIs(t, s.Delete(ctx, "stripe:a"), dedupe.ErrNotFound)
	l, _, err := s.Claim(ctx, "stripe:a", "another", nil)
	require.NoError(t, err, "a deleted key is forwarded again")
	require.NotZero(t, l.Token)
	stats, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, map[dedupe.State]int{dedupe.InFlight: 2, dedupe.Completed: 2}, stats)
}

func TestPruneRemovesExactlyTheExpired(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c, func(o *Options) { o.Retention = time.Hour; o.AbandonAfter = 30 * time.Minute })
	complete := func(key string) {
		l, _, err := s.Claim(ctx, key, "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	}
	complete("old:1")
	complete("old:2")
	_, _, err := s.Claim(ctx, "abandoned:1", "fp", nil) // expires at lease (1m) + 30m
	require.NoError(t, err)
	c.Advance(40 * time.Minute)
	complete("new:1")
	_, _, err = s.Claim(ctx, "running:1", "fp", nil)
	require.NoError(t, err)
	c.Advance(21 * time.Minute) // old:* are 61m old, abandoned:1 is 30m past its lease

	n, err := s.Prune(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, 1, n, "bounded batch")
	n, err = s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	recs, err := s.List(ctx, dedupe.ListOptions{})
	require.NoError(t, err)
	var left []string
	for _, r := range recs {
		left = append(left, r.Key)
	}
	require.Equal(t, []string{"new:1", "running:1"}, left)
	require.Equal(t, 2, s.indexLen(t), "index entries go with their records")

	c.Advance(2 * time.Hour)
	n, err = s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 0, s.indexLen(t))
}

func TestMapGrowsWithoutLosingWrites(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	small := func(o *Options) { o.MapSize = 1 << 20; o.NoSync = true }
	s := openTest(t, dir, c, small)
	body := bytes.Repeat([]byte("x"), 32<<10)
	l, _, err := s.Claim(ctx, "grow:seed", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}))

	// Readers run throughout the resizes, each checking a record written
	// before them, whole.
	stop := make(chan struct{})
	readErrs := make(chan error, 4)
	var reads atomic.Int64
	var readers sync.WaitGroup
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					readErrs <- nil
					return
				default:
				}
				rec, err := s.Get(ctx, "grow:seed")
				if err == nil && !bytes.Equal(rec.Response.Body, body) {
					err = errors.New("seed record read back wrong")
				}
				if err == nil {
					_, err = s.List(ctx, dedupe.ListOptions{Prefix: "grow:", Limit: 3})
				}
				if err != nil {
					readErrs <- err
					return
				}
				reads.Add(1)
			}
		}()
	}

	var wg sync.WaitGroup
	errs := make(chan error, 256)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 16; i++ {
				key := fmt.Sprintf("grow:%d:%d", w, i)
				l, _, err := s.Claim(ctx, key, "fp", nil)
				if err == nil {
					err = s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body})
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", key, err)
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for r := 0; r < 4; r++ {
		require.NoError(t, <-readErrs)
	}
	require.Positive(t, reads.Load())
	grown := s.MapSize()
	require.GreaterOrEqual(t, grown, int64(4<<20), "128 records of 32 KiB need a 4 MiB map at least")
	stats, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 129, stats[dedupe.Completed])
	checkConsistent(t, s)

	// Reopened with the same small initial size, the store keeps its grown
	// map and every record, and grows on.
	require.NoError(t, s.Close())
	s = openTest(t, dir, c, small)
	require.GreaterOrEqual(t, s.MapSize(), grown)
	for w := 0; w < 8; w++ {
		for i := 0; i < 16; i++ {
			rec, err := s.Get(ctx, fmt.Sprintf("grow:%d:%d", w, i))
			require.NoError(t, err)
			require.Equal(t, body, rec.Response.Body)
		}
	}
	for i := 0; i < 128; i++ {
		l, _, err := s.Claim(ctx, fmt.Sprintf("grow:more:%d", i), "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}))
	}
	require.Greater(t, s.MapSize(), grown)
	checkConsistent(t, s)
}

func TestMapFullAtMaximumIsUnavailable(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock(), func(o *Options) { o.MapSize = 1 << 20; o.MaxMapSize = 1 << 20; o.NoSync = true })
	body := bytes.Repeat([]byte("x"), 60<<10)
	var sawFull bool
	for i := 0; i < 64 && !sawFull; i++ {
		l, _, err := s.Claim(ctx, fmt.Sprintf("full:%d", i), "fp", nil)
		if err == nil {
			err = s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body})
		}
		if err != nil {
			require.ErrorIs(t, err, dedupe.ErrUnavailable)
			sawFull = true
		}
	}
	require.True(t, sawFull)
	// Reads still work and earlier records are intact.
	rec, err := s.Get(ctx, "full:0")
	require.NoError(t, err)
	require.Equal(t, body, rec.Response.Body)
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, buf := range [][]byte{nil, {1}, {9, 1, 2, 3}, append(encodeRecord(nil, &dedupe.Record{State: dedupe.Completed})[:48], 0xff), append(encodeRecord(nil, &dedupe.Record{State: dedupe.Completed}), 0)} {
		for _, want := range []bodies{noBodies, responseBody, allBodies} {
			_, err := decodeRecord("k", buf, want)
			require.ErrorIs(t, err, dedupe.ErrCorrupt, "a read without bodies checks their lengths too")
		}
	}
	r := dedupe.Record{Key: "k", State: dedupe.Failed, Attempts: 3, CreatedAt: time.Unix(5, 0).UTC(), Fingerprint: "fp",
		Response: dedupe.Response{Status: 404, ContentType: "text/plain", Body: []byte("nope")}}
	got, err := decodeRecord("k", encodeRecord(nil, &r), allBodies)
	require.NoError(t, err)
	require.Equal(t, r, got)
}

func TestClosedStore(t *testing.T) {
	s := openTest(t, t.TempDir(), newClock())
	require.NoError(t, s.Close())
	_, _, err := s.Claim(ctx, "a:b", "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrClosed)
	require.NoError(t, s.Close(), "Close is idempotent")
}

// indexLen counts expiry index entries.
func (s *Store) indexLen(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, s.view(func(txn *mdb.Txn) error {
		st, err := txn.Stat(s.expiry)
		if err != nil {
			return err
		}
		n = int(st.Entries)
		return nil
	}))
	return n
}

func TestDeleteRefusesALiveClaimUnlessForced(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	_, _, err := s.Claim(ctx, "stripe:live", "fp", nil)
	require.NoError(t, err)
	require.ErrorIs(t, s.Delete(ctx, "stripe:live"), dedupe.ErrInFlight)
	_, err = s.Get(ctx, "stripe:live")
	require.NoError(t, err, "the refused delete changed nothing")

	c.Advance(time.Minute) // the lease has passed: an abandoned claim may go
	require.NoError(t, s.Delete(ctx, "stripe:live"))

	_, _, err = s.Claim(ctx, "stripe:forced", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.ForceDelete(ctx, "stripe:forced"))
	_, err = s.Get(ctx, "stripe:forced")
	require.ErrorIs(t, err, dedupe.ErrNotFound)
	require.Zero(t, s.indexLen(t), "index entries go with their records")
}

// corrupt overwrites key's record with bytes that do not decode.
func corrupt(t *testing.T, s *Store, key string) {
	t.Helper()
	require.NoError(t, s.write(ctx, func(txn *mdb.Txn) error {
		return txn.Put(s.records, []byte(key), []byte{99, 1, 2}, 0)
	}))
	_, err := s.Get(ctx, key)
	require.ErrorIs(t, err, dedupe.ErrCorrupt)
}

func TestCorruptRecordsDoNotStallPruningOrDeletion(t *testing.T) {
	c := newClock()
	s := openTest(t, t.TempDir(), c)
	for _, k := range []string{"a:1", "a:2", "a:3"} {
		l, _, err := s.Claim(ctx, k, "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	}
	corrupt(t, s, "a:1")
	corrupt(t, s, "a:3")

	require.ErrorIs(t, s.Delete(ctx, "a:3"), dedupe.ErrCorrupt, "only a forced delete removes what it cannot read")
	require.NoError(t, s.ForceDelete(ctx, "a:3"))
	_, err := s.Get(ctx, "a:3")
	require.ErrorIs(t, err, dedupe.ErrNotFound)

	c.Advance(2 * time.Hour)
	n, err := s.Prune(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n, "a:1 (unreadable) and a:2 go; a:3's orphan index entry is dropped")
	recs, err := s.List(ctx, dedupe.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Zero(t, s.indexLen(t))
}
