package deliver

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
)

// fakeClock is a Clock the test advances. Each After signals timers, so a
// test can wait for the loop to be waiting.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
	armed  chan time.Duration
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), armed: make(chan time.Duration, 1000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Until(at time.Time) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	d := at.Sub(c.now)
	if d <= 0 {
		ch <- c.now
	} else {
		c.timers = append(c.timers, fakeTimer{at, ch})
	}
	c.mu.Unlock()
	c.armed <- d
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now
	}
	c.timers = kept
}

// waitArmed waits for the loop to arm a timer (one not yet waited for):
// it has finished a pass and is about to wait.
func (c *fakeClock) waitArmed(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.armed:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never waited")
		return 0
	}
}

// fakeCore hands each attempt to the test and answers what the test says.
type fakeCore struct {
	got     chan dispatch.Request
	answers chan dispatch.Result

	mu            sync.Mutex
	open, maxOpen int // attempts under way, and the most at once
}

func newFakeCore() *fakeCore {
	return &fakeCore{got: make(chan dispatch.Request, 100), answers: make(chan dispatch.Result, 100)}
}

func (f *fakeCore) Forward(ctx context.Context, req dispatch.Request) dispatch.Result {
	f.mu.Lock()
	f.open++
	f.maxOpen = max(f.maxOpen, f.open)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.open--
		f.mu.Unlock()
	}()
	f.got <- req
	select {
	case r := <-f.answers:
		return r
	case <-ctx.Done():
		return dispatch.Result{Err: ctx.Err()}
	}
}

// mostOpen is the most attempts that were under way at once.
func (f *fakeCore) mostOpen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxOpen
}

func (f *fakeCore) next(t *testing.T) dispatch.Request {
	t.Helper()
	select {
	case r := <-f.got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no attempt reached the core")
		return dispatch.Request{}
	}
}

func (f *fakeCore) none(t *testing.T) {
	t.Helper()
	select {
	case r := <-f.got:
		t.Fatalf("an attempt reached the core: %s", r.IdempotencyKey)
	default:
	}
}

var (
	delivered   = dispatch.Result{Outcome: dispatch.Delivered, Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	rejected    = dispatch.Result{Outcome: dispatch.Rejected, Status: 422, Body: []byte("no")}
	serverError = dispatch.Result{Outcome: dispatch.Unavailable, Status: 500, Body: []byte("down")}
	noAnswer    = dispatch.Result{Outcome: dispatch.Unavailable, Err: errors.New("connection refused")}
)

type harness struct {
	t        *testing.T
	clock    *fakeClock
	store    *lmdb.Store
	core     *fakeCore
	loop     *Loop
	outcomes chan string
	store2   Store       // what the loop uses, when a test wraps the store
	busy     atomic.Bool // Options.Busy
}

// start opens a store and a loop with one destination, "ledger", made by
// d from the defaults (fixed backoff: the retry-th waits retry seconds),
// and runs the loop until the test ends.
func start(t *testing.T, d func(*Destination), wrap func(Store) Store) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), core: newFakeCore(), outcomes: make(chan string, 100)}
	s, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1, Now: h.clock.Now, Lease: time.Minute}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	h.store = s
	var st Store = s
	if wrap != nil {
		st = wrap(s)
	}
	dest := Destination{Name: "ledger", Forwarder: h.core, MaxAge: time.Hour}
	if d != nil {
		d(&dest)
	}
	h.loop, err = New(Options{
		Store: st, Clock: h.clock, Poll: time.Second,
		Backoff:   func(retry int) time.Duration { return time.Duration(retry) * time.Second },
		OnAttempt: func(_, outcome string) { h.outcomes <- outcome },
		Busy:      h.busy.Load,
	}, []Destination{dest})
	require.NoError(t, err)
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.loop.Run(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// ledger is the store key of stripe's event for the destination ledger.
func ledger(event string) dedupe.Key {
	return dedupe.Key{Source: "stripe", Event: event, Destination: "ledger"}
}

// holdAnswers makes the core answer only when the test sends an answer,
// to an attempt under way (the answers channel unbuffered), and queues n
// events evt_0 ... for the loop, not yet run.
func (h *harness) holdAnswers(n int) {
	h.core.answers = make(chan dispatch.Result)
	for i := range n {
		h.enqueue(fmt.Sprintf("evt_%d", i))
	}
}

func (h *harness) enqueue(event string) {
	h.t.Helper()
	rec, err := h.store.Enqueue(context.Background(), dedupe.Enqueue{Key: ledger(event).String(), Fingerprint: "fp", MaxAge: time.Hour,
		Request: dedupe.NewRequest("application/json", "invoice.paid", []byte(`{"id":"`+event+`"}`), true)})
	require.NoError(h.t, err)
	require.Nil(h.t, rec)
	h.loop.Wake("ledger")
}

func (h *harness) outcome() string {
	h.t.Helper()
	select {
	case o := <-h.outcomes:
		return o
	case <-time.After(10 * time.Second):
		h.t.Fatal("no attempt was settled")
		return ""
	}
}

func (h *harness) record(event string) dedupe.Record {
	h.t.Helper()
	rec, err := h.store.Get(context.Background(), ledger(event).String())
	require.NoError(h.t, err)
	return rec
}

func TestDeliversWithTheSyncForwardsRequest(t *testing.T) {
	h := start(t, nil, nil)
	h.run()
	h.enqueue("evt_1")
	req := h.core.next(t)
	require.Equal(t, dispatch.NewRequest(ledger("evt_1"), "stripe", "invoice.paid", "application/json", []byte(`{"id":"evt_1"}`)), req,
		"the same Idempotency-Key, body and headers as a sync forward")
	h.core.answers <- delivered
	require.Equal(t, OutcomeDelivered, h.outcome())
	rec := h.record("evt_1")
	require.Equal(t, dedupe.Completed, rec.State)
	require.Equal(t, 200, rec.Response.Status)
	require.Equal(t, []byte(`{"ok":true}`), rec.Response.Body)
}

func TestUnavailableIsRetriedAfterItsBackoff(t *testing.T) {
	h := start(t, nil, nil)
	h.run()
	h.enqueue("evt_1")
	h.core.next(t)
	h.core.answers <- serverError
	require.Equal(t, OutcomeUnavailable, h.outcome())
	rec := h.record("evt_1")
	require.Equal(t, dedupe.Queued, rec.State)
	require.Equal(t, h.clock.Now().Add(time.Second), rec.NextAttempt, "the first retry's backoff")
	h.core.none(t)

	h.clock.Advance(time.Second)
	h.core.next(t)
	h.core.answers <- noAnswer
	require.Equal(t, OutcomeUnavailable, h.outcome())
	rec = h.record("evt_1")
	require.Equal(t, h.clock.Now().Add(2*time.Second), rec.NextAttempt, "the second retry's")
	require.Equal(t, 503, rec.Response.Status, "no answer is kept as a 503")
	require.Contains(t, string(rec.Response.Body), "connection refused")

	h.clock.Advance(2 * time.Second)
	h.core.next(t)
	h.core.answers <- rejected
	require.Equal(t, OutcomeRejected, h.outcome())
	rec = h.record("evt_1")
	require.Equal(t, dedupe.Failed, rec.State)
	require.Equal(t, 422, rec.Response.Status)
	require.Contains(t, rec.Reason, "rejected")
	require.Equal(t, uint32(3), rec.Attempts)
}

func TestNoAttemptStartsAfterMaxAge(t *testing.T) {
	h := start(t, func(d *Destination) { d.MaxAge = 2 * time.Second }, nil)
	h.run()
	h.enqueue("evt_1")
	h.core.next(t)
	h.core.answers <- serverError
	require.Equal(t, OutcomeUnavailable, h.outcome())
	h.clock.Advance(time.Second)
	h.core.next(t)
	h.core.answers <- serverError // the next retry would start at 1 s + 2 s: past max_age
	require.Equal(t, OutcomeExpired, h.outcome())
	rec := h.record("evt_1")
	require.Equal(t, dedupe.Failed, rec.State)
	require.Equal(t, 500, rec.Response.Status, "the last answer")
	require.Contains(t, rec.Reason, "max_age 2s passed")
}

func TestAnEventOlderThanMaxAgeIsNotSent(t *testing.T) {
	h := start(t, func(d *Destination) { d.MaxAge = time.Second }, nil)
	h.enqueue("evt_1")
	h.clock.Advance(2 * time.Second) // the node was down meanwhile
	h.run()
	require.Equal(t, OutcomeExpired, h.outcome())
	h.core.none(t)
	rec := h.record("evt_1")
	require.Equal(t, dedupe.Failed, rec.State)
	require.Equal(t, 503, rec.Response.Status)
}

// damaging cuts the stored body of every attempt it takes.
type damaging struct{ Store }

func (d damaging) Take(ctx context.Context, destination string, limit int) ([]dedupe.Attempt, error) {
	got, err := d.Store.Take(ctx, destination, limit)
	for i := range got {
		got[i].Record.Request.Body = got[i].Record.Request.Body[:1]
	}
	return got, err
}

func TestADamagedRequestIsFailedNeverSent(t *testing.T) {
	h := start(t, nil, func(s Store) Store { return damaging{s} })
	h.run()
	h.enqueue("evt_1")
	require.Equal(t, OutcomeDamaged, h.outcome())
	h.core.none(t)
	rec := h.record("evt_1")
	require.Equal(t, dedupe.Failed, rec.State)
	require.Contains(t, rec.Reason, "not whole")
}

func TestConcurrencyBoundsTheOpenAttempts(t *testing.T) {
	h := start(t, func(d *Destination) { d.Concurrency = 2 }, nil)
	h.holdAnswers(5)
	h.run()
	h.core.next(t)
	h.core.next(t)
	h.clock.waitArmed(t)
	h.core.none(t)
	h.core.answers <- delivered
	require.Equal(t, OutcomeDelivered, h.outcome())
	h.core.next(t)
	h.clock.waitArmed(t)
	h.core.none(t)
	for range 2 {
		h.core.answers <- delivered
	}
	for range 2 {
		require.Equal(t, OutcomeDelivered, h.outcome())
	}
	h.core.next(t)
	h.core.next(t)
	h.clock.waitArmed(t)
	h.core.none(t)
	for range 2 {
		h.core.answers <- delivered
		require.Equal(t, OutcomeDelivered, h.outcome())
	}
	require.Equal(t, 2, h.core.mostOpen(), "attempts open at once")
}

func TestABusyNodeKeepsOneAttemptOpen(t *testing.T) {
	h := start(t, func(d *Destination) { d.Concurrency = 4 }, nil)
	h.holdAnswers(5)
	h.busy.Store(true)
	h.run()
	for range 2 {
		h.core.next(t)
		h.clock.waitArmed(t)
		h.core.none(t)
		h.core.answers <- delivered
		require.Equal(t, OutcomeDelivered, h.outcome())
	}
	// No longer busy: the next pass takes up to the concurrency. The pass
	// that settled evt_1 may have read the node busy still and started
	// evt_2 alone; a worker waiting on its open attempt sees the change at
	// its next look, which the wake brings on at once.
	h.busy.Store(false)
	h.loop.Wake("ledger")
	h.core.next(t)
	h.core.next(t)
	h.core.next(t)
	for range 3 {
		h.core.answers <- delivered
		require.Equal(t, OutcomeDelivered, h.outcome())
	}
	require.Equal(t, 3, h.core.mostOpen(), "attempts open at once")
}

// countingWrites counts the loop's writes: its Takes and its Settles, with
// the attempts each carried.
type countingWrites struct {
	Store
	mu      sync.Mutex
	takes   []int
	settles []int
}

func (c *countingWrites) Take(ctx context.Context, destination string, limit int) ([]dedupe.Attempt, error) {
	got, err := c.Store.Take(ctx, destination, limit)
	c.mu.Lock()
	c.takes = append(c.takes, len(got))
	c.mu.Unlock()
	return got, err
}

func (c *countingWrites) Settle(ctx context.Context, sts []dedupe.Settlement) ([]error, error) {
	c.mu.Lock()
	c.settles = append(c.settles, len(sts))
	c.mu.Unlock()
	return c.Store.Settle(ctx, sts)
}

// A busy queue is taken and settled many events a write: a pass waits
// until half the concurrency is free, then settles every attempt that
// ended in one write and takes as many as are free in another.
func TestABusyQueueIsTakenAndSettledInBatches(t *testing.T) {
	w := &countingWrites{}
	h := start(t, func(d *Destination) { d.Concurrency = 4 }, func(s Store) Store { w.Store = s; return w })
	h.holdAnswers(8)
	h.run()
	for range 4 {
		h.core.next(t)
	}
	h.core.answers <- delivered
	h.clock.waitArmed(t) // one slot free of four: the answer waits for a second
	h.core.none(t)
	h.core.answers <- delivered
	for range 2 {
		require.Equal(t, OutcomeDelivered, h.outcome())
	}
	for range 2 {
		h.core.next(t) // two free: two taken
	}
	for range 4 {
		h.core.answers <- delivered
	}
	for range 2 {
		h.core.next(t)
	}
	for range 2 {
		h.core.answers <- delivered
	}
	for range 6 {
		require.Equal(t, OutcomeDelivered, h.outcome())
	}
	for i := range 8 {
		require.Equal(t, dedupe.Completed, h.record(fmt.Sprintf("evt_%d", i)).State)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Equal(t, 4, w.takes[0], "the first pass takes every free slot")
	require.Equal(t, 2, w.settles[0], "the first two answers in one write")
	sum := 0
	for _, n := range w.settles {
		sum += n
	}
	require.Equal(t, 8, sum)
	// Written one by one, eight answers are eight writes; a full queue's
	// are written two or more at a time (the last two may go alone, with
	// half the slots free).
	require.LessOrEqual(t, len(w.settles), 5, "eight answers in at most five writes: %v", w.settles)
	taking := 0
	for _, n := range w.takes {
		if n > 0 {
			taking++
		}
	}
	require.LessOrEqual(t, taking, 3, "eight events taken in at most three writes: %v", w.takes)
}

func TestRateBoundsTheStartsPerSecond(t *testing.T) {
	h := start(t, func(d *Destination) { d.Rate = 2 }, nil)
	for i := range 5 {
		h.enqueue(fmt.Sprintf("evt_%d", i))
	}
	h.run()
	for second := range 3 {
		want := min(2, 5-2*second)
		for range want {
			h.core.next(t)
			h.core.answers <- delivered
			require.Equal(t, OutcomeDelivered, h.outcome())
		}
		h.clock.waitArmed(t)
		h.core.none(t)
		h.clock.Advance(time.Second)
	}
}

func TestAPausedDestinationGetsNoAttempts(t *testing.T) {
	h := start(t, nil, nil)
	ctx := context.Background()
	require.NoError(t, h.store.SetPaused(ctx, "ledger", true))
	h.enqueue("evt_1")
	h.run()
	h.clock.waitArmed(t)
	h.core.none(t)
	h.clock.Advance(time.Second)
	h.clock.waitArmed(t)
	h.core.none(t)
	require.NoError(t, h.store.SetPaused(ctx, "ledger", false))
	h.clock.Advance(time.Second) // the flag is read again within a poll
	h.core.next(t)
	h.core.answers <- delivered
	require.Equal(t, OutcomeDelivered, h.outcome())
}

// An attempt whose process died (its lease taken, never settled) is
// attempted again once the lease passes.
func TestAnAttemptLostInACrashComesDueAgain(t *testing.T) {
	h := start(t, nil, nil)
	h.enqueue("evt_1")
	got, err := h.store.Take(context.Background(), "ledger", 1) // the process that died
	require.NoError(t, err)
	require.Len(t, got, 1)
	h.run()
	h.clock.waitArmed(t)
	h.core.none(t)
	h.clock.Advance(time.Minute)
	req := h.core.next(t)
	require.Equal(t, "stripe:evt_1", req.IdempotencyKey, "the same for every destination")
	h.core.answers <- delivered
	require.Equal(t, OutcomeDelivered, h.outcome())
}

func TestJitterBackoff(t *testing.T) {
	for _, tc := range []struct {
		retry    int
		low, top time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{4, 4 * time.Second, 8 * time.Second},
		{10, 256 * time.Second, 512 * time.Second},
		{11, 5 * time.Minute, 10 * time.Minute},
		{1000, 5 * time.Minute, 10 * time.Minute},
	} {
		require.Equal(t, tc.low, JitterBackoff(tc.retry, 0), tc.retry)
		require.Equal(t, tc.top, JitterBackoff(tc.retry, 1), tc.retry)
		got := DefaultBackoff(tc.retry)
		require.True(t, got >= tc.low && got <= tc.top, "%d: %s", tc.retry, got)
	}
}

// The window never lets more than the rate start in any one-second window,
// however the starts are asked for.
func TestWindowHoldsTheRateInEveryWindow(t *testing.T) {
	for _, rate := range []float64{200, 2, 0.5, 50.5} {
		w := newWindow(rate)
		t0 := time.Unix(0, 0)
		var starts []time.Time
		for now := t0; now.Before(t0.Add(10 * time.Second)); now = now.Add(time.Millisecond) {
			for n := w.available(now); n > 0; n-- {
				w.record(now)
				starts = append(starts, now)
			}
		}
		limit := max(1, int(rate))
		for i := range starts {
			j := i
			for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
				j++
			}
			require.LessOrEqual(t, j-i, limit, "rate %v: starts in the second from %s", rate, starts[i].Sub(t0))
		}
		got := float64(len(starts)) / 10
		require.InDelta(t, rate, got, rate*0.1+0.1, "rate %v reached", rate)
	}
}

func TestNewRefusesBadDestinations(t *testing.T) {
	s := struct{ Store }{}
	core := newFakeCore()
	for name, d := range map[string]Destination{
		"bad name":         {Name: "Ledger", Forwarder: core},
		"no forwarder":     {Name: "ledger"},
		"negative rate":    {Name: "ledger", Forwarder: core, Rate: -1},
		"negative max_age": {Name: "ledger", Forwarder: core, MaxAge: -time.Second},
	} {
		_, err := New(Options{Store: s}, []Destination{d})
		require.ErrorIs(t, err, ErrInvalid, name)
	}
	_, err := New(Options{Store: s}, []Destination{{Name: "a", Forwarder: core}, {Name: "a", Forwarder: core}})
	require.ErrorIs(t, err, ErrInvalid, "twice")
}

type countingPauses struct {
	mu    sync.Mutex
	flags map[string]dedupe.Pause
	reads int
	read  chan struct{} // a read after the first has begun
	// release lets a read after the first answer: until then it holds,
	// as a slow store would, so the test sees what is answered meanwhile.
	release chan struct{}
}

func (c *countingPauses) Paused(context.Context) (map[string]dedupe.Pause, error) {
	c.mu.Lock()
	c.reads++
	later := c.reads > 1
	c.mu.Unlock()
	if later {
		c.read <- struct{}{}
		<-c.release
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flags, nil
}

func (c *countingPauses) set(flags map[string]dedupe.Pause) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flags = flags
}

func TestPausesAreReadOncePerInterval(t *testing.T) {
	clock := newFakeClock()
	store := &countingPauses{flags: map[string]dedupe.Pause{"billing": {Paused: true}}, read: make(chan struct{}, 1), release: make(chan struct{})}
	p := NewPauses(store, time.Second, clock.Now)
	require.True(t, p.Paused("billing"), "the first answer waits for the store")
	require.False(t, p.Paused("ledger"))
	store.set(map[string]dedupe.Pause{})
	require.True(t, p.Paused("billing"), "within the interval")
	select {
	case <-store.read:
		t.Fatal("read again within the interval")
	default:
	}
	clock.Advance(time.Second)
	require.True(t, p.Paused("billing"), "answered from the flags in hand while they are read again")
	<-store.read
	require.True(t, p.Paused("billing"), "still the flags in hand while the read holds")
	close(store.release)
	for p.refreshingNow() {
		runtime.Gosched()
	}
	require.False(t, p.Paused("billing"), "read again: resumed")
}

// refreshingNow reports whether a background read is under way.
func (p *Pauses) refreshingNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshing
}
