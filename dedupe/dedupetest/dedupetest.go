// Package dedupetest is the conformance kit of the dedupe contract: one
// behavioural table (Run) that every backend's tests run over their store,
// so that the backends answer alike, and the helpers those tests share.
package dedupetest

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// kitCase is one case of the behavioural table: it runs on a fresh store
// whose clock it may advance.
type kitCase struct {
	name string
	run  func(t *testing.T, s dedupe.Store, clock *Clock)
}

// fixture is what the cases share: a context, the key and fingerprint they
// claim, and the answer they record.
func fixture() (ctx context.Context, key, fp string, ok dedupe.Response) {
	return context.Background(), "stripe:evt_1", "fp-a",
		dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
}

// Run runs the behavioural table over the store open returns: every case
// opens a fresh store, with a Lease of a minute, a Retention of two hours,
// an AbandonAfter of an hour and Now reading a Clock the case advances.
// open must return an empty store with these options, its background
// pruner disabled (the cases call Prune), and close it when the test ends.
func Run(t *testing.T, open func(t *testing.T, opts dedupe.Options) dedupe.Store) {
	t.Helper()
	cases := append(append(transitionCases(), redriveCases()...), requestLogCases()...)
	cases = append(cases, queueCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock()
			s := open(t, dedupe.Options{Lease: time.Minute, Retention: 2 * time.Hour, AbandonAfter: time.Hour, Now: clock.Now})
			tc.run(t, s, clock)
		})
	}
}

// BenchClaimComplete measures one delivery's store work on s, a claim of a
// new key keeping req (nil: none) and its completion, from parallel
// callers. Keys are unique across runs, so that one store serves several.
func BenchClaimComplete(b *testing.B, s dedupe.Store, req *dedupe.Request) {
	b.Helper()
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("stripe:evt_%d_%d", time.Now().UnixNano(), n.Add(1))
			l, _, err := s.Claim(ctx, key, "fp", req)
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

// BenchReplay measures the path of every provider retry of a finished
// event on s: a Claim that replays a COMPLETED record whose stored request
// is bodySize bytes (run with -benchmem).
func BenchReplay(b *testing.B, s dedupe.Store, bodySize int) {
	b.Helper()
	ctx := context.Background()
	key := StoreFinished(b, s, bodySize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, rec, err := s.Claim(ctx, key, "fp", nil); err != nil || rec == nil {
			b.Fatal(err, rec)
		}
	}
}

// StoreFinished stores a new COMPLETED record, claimed with fingerprint
// "fp" and a request of bodySize bytes, and returns its key.
func StoreFinished(tb testing.TB, s dedupe.Store, bodySize int) string {
	tb.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("stripe:evt_replay_%d_%d", bodySize, time.Now().UnixNano())
	req := dedupe.NewRequest("application/json", "invoice.paid", bytes.Repeat([]byte("x"), bodySize), true)
	l, _, err := s.Claim(ctx, key, "fp", req)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Complete(ctx, l, dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}); err != nil {
		tb.Fatal(err)
	}
	return key
}

// allocated returns the bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	fn()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
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
