// Package dedupetest is the conformance kit of the dedupe contract: one
// behavioural table (Run) that every backend's tests run over their store,
// so that the backends answer alike, and the helpers those tests share.
package dedupetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// Run runs the behavioural table over the store open returns: every case
// opens a fresh store, with a Lease of a minute, a Retention of two hours,
// an AbandonAfter of an hour and Now reading a Clock the case advances.
// open must return an empty store with these options, its background
// pruner disabled (the cases call Prune), and close it when the test ends.
func Run(t *testing.T, open func(t *testing.T, opts dedupe.Options) dedupe.Store) {
	t.Helper()
	ctx := context.Background()
	const (
		key = "stripe:evt_1"
		fp  = "fp-a"
	)
	ok := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	cases := []struct {
		name string
		run  func(t *testing.T, s dedupe.Store, clock *Clock)
	}{
		{"claim, in flight, mismatch", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, rec, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.Nil(t, rec)
			require.NotZero(t, l.Token)
			require.Equal(t, clock.Now().Add(time.Minute), l.Until)
			_, rec, err = s.Claim(ctx, key, fp)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
			require.Equal(t, l.Until, rec.LeaseUntil)
			_, _, err = s.Claim(ctx, key, "fp-b")
			require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch)
			_, _, err = s.Claim(ctx, "", fp)
			require.ErrorIs(t, err, dedupe.ErrInvalidKey)
		}},
		{"complete then replay", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			for range 2 {
				_, rec, err := s.Claim(ctx, key, fp)
				require.NoError(t, err)
				require.Equal(t, dedupe.Completed, rec.State)
				require.Equal(t, ok, rec.Response)
			}
			_, rec, err := s.Claim(ctx, key, "fp-b")
			require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch)
			require.NotNil(t, rec)
			require.ErrorIs(t, s.Complete(ctx, l, ok), dedupe.ErrLeaseLost, "a second Complete")
			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, uint32(1), got.Attempts)
			require.Equal(t, clock.Now().Add(2*time.Hour), got.ExpiresAt)
			require.Zero(t, got.Token)
		}},
		{"fail then replay, body capped", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			big := bytes.Repeat([]byte("x"), dedupe.MaxStoredBody+10)
			require.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 422, Body: big}))
			_, rec, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, rec.State)
			require.Equal(t, 422, rec.Response.Status)
			require.Len(t, rec.Response.Body, dedupe.MaxStoredBody)
		}},
		{"release frees the key", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, l))
			require.ErrorIs(t, s.Release(ctx, l), dedupe.ErrLeaseLost)
			_, err = s.Get(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrNotFound)
			l2, rec, err := s.Claim(ctx, key, "fp-b")
			require.NoError(t, err, "a released key is new again, whatever its payload")
			require.Nil(t, rec)
			require.NotEqual(t, l.Token, l2.Token)
		}},
		{"takeover after the lease; the late finisher loses", func(t *testing.T, s dedupe.Store, clock *Clock) {
			old, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			clock.Advance(59 * time.Second)
			_, _, err = s.Claim(ctx, key, fp)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
			clock.Advance(time.Second)
			_, _, err = s.Claim(ctx, key, "fp-b")
			require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch, "no takeover by another payload")
			cur, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NotEqual(t, old.Token, cur.Token)
			require.ErrorIs(t, s.Complete(ctx, old, ok), dedupe.ErrLeaseLost)
			require.ErrorIs(t, s.Fail(ctx, old, ok), dedupe.ErrLeaseLost)
			require.ErrorIs(t, s.Release(ctx, old), dedupe.ErrLeaseLost)
			rec, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.InFlight, rec.State)
			require.Equal(t, uint32(2), rec.Attempts)
			require.NoError(t, s.Complete(ctx, cur, ok))
		}},
		{"delete refuses a live claim", func(t *testing.T, s dedupe.Store, clock *Clock) {
			require.ErrorIs(t, s.Delete(ctx, key), dedupe.ErrNotFound)
			l, _, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.ErrorIs(t, s.Delete(ctx, key), dedupe.ErrInFlight)
			require.NoError(t, s.ForceDelete(ctx, key))
			require.ErrorIs(t, s.Complete(ctx, l, ok), dedupe.ErrLeaseLost)
			_, _, err = s.Claim(ctx, key, fp)
			require.NoError(t, err)
			clock.Advance(time.Minute)
			require.NoError(t, s.Delete(ctx, key), "a claim past its lease is deletable")
			l, _, err = s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			require.NoError(t, s.Delete(ctx, key))
			_, rec, err := s.Claim(ctx, key, fp)
			require.NoError(t, err)
			require.Nil(t, rec, "a deleted event is forwarded again")
		}},
		{"prune deletes exactly what expired", func(t *testing.T, s dedupe.Store, clock *Clock) {
			finish := func(k string) {
				l, _, err := s.Claim(ctx, k, fp)
				require.NoError(t, err)
				require.NoError(t, s.Complete(ctx, l, ok))
			}
			for i := range 3 {
				finish(fmt.Sprintf("stripe:old%d", i))
			}
			clock.Advance(time.Hour)
			finish("stripe:new0")
			finish("stripe:new1")
			_, _, err := s.Claim(ctx, "stripe:running", fp) // expires at lease+1h abandon
			require.NoError(t, err)
			n, err := s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Zero(t, n)
			clock.Advance(time.Hour) // old ones expire now, exactly
			n, err = s.Prune(ctx, 2)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			n, err = s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			n, err = s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Zero(t, n)
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, 2, st[dedupe.Completed])
			require.Equal(t, 1, st[dedupe.InFlight])
			_, err = s.Get(ctx, "stripe:old0")
			require.ErrorIs(t, err, dedupe.ErrNotFound)
			_, rec, err := s.Claim(ctx, "stripe:new1", fp)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
		}},
		{"list filters and pages in key order", func(t *testing.T, s dedupe.Store, clock *Clock) {
			for _, k := range []string{"xendit:a", "stripe:b", "stripe:a", "stripe:c"} {
				l, _, err := s.Claim(ctx, k, fp)
				require.NoError(t, err)
				if k != "stripe:c" {
					require.NoError(t, s.Complete(ctx, l, ok))
				}
			}
			keys := func(o dedupe.ListOptions) []string {
				recs, err := s.List(ctx, o)
				require.NoError(t, err)
				var out []string
				for _, r := range recs {
					out = append(out, r.Key)
				}
				return out
			}
			require.Equal(t, []string{"stripe:a", "stripe:b", "stripe:c", "xendit:a"}, keys(dedupe.ListOptions{}))
			require.Equal(t, []string{"stripe:a", "stripe:b"}, keys(dedupe.ListOptions{Prefix: "stripe:", State: dedupe.Completed}))
			require.Equal(t, []string{"stripe:b", "stripe:c"}, keys(dedupe.ListOptions{Prefix: "stripe:", After: "stripe:a", Limit: 2}))
			require.Equal(t, []string{"stripe:c"}, keys(dedupe.ListOptions{State: dedupe.InFlight}))
			require.NoError(t, s.Ping(ctx))
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, map[dedupe.State]int{dedupe.Completed: 3, dedupe.InFlight: 1}, st, "Ping leaves nothing behind")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock()
			s := open(t, dedupe.Options{Lease: time.Minute, Retention: 2 * time.Hour, AbandonAfter: time.Hour, Now: clock.Now})
			tc.run(t, s, clock)
		})
	}
}

// BenchClaimComplete measures one delivery's store work on s, a claim and a
// completion of a new key, from parallel callers.
func BenchClaimComplete(b *testing.B, s dedupe.Store) {
	b.Helper()
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("stripe:evt_%d", n.Add(1))
			l, _, err := s.Claim(ctx, key, "fp")
			if err != nil {
				b.Error(err)
				return
			}
			if err := s.Complete(ctx, l, dedupe.Response{Status: 200}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Clock is a settable clock, for Options.Now.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at a fixed instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
