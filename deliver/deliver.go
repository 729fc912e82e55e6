package deliver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
)

// Store is what the loop needs of the store: dedupe.Queue's delivery side
// and the Claimer's Complete, which records a 2xx. Settle records a
// pass's answers in one write; the one-attempt settles are what the loop
// falls back to when that write fails.
type Store interface {
	Take(ctx context.Context, destination string, limit int) ([]dedupe.Attempt, error)
	Settle(ctx context.Context, settlements []dedupe.Settlement) ([]error, error)
	Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error
	Retry(ctx context.Context, l dedupe.Lease, next time.Time, resp dedupe.Response) error
	FailAttempt(ctx context.Context, l dedupe.Lease, resp dedupe.Response, reason string) error
	NextDue(ctx context.Context, destination string) (time.Time, bool, error)
	Paused(ctx context.Context) (map[string]dedupe.Pause, error)
}

// Forwarder sends one attempt: a *dispatch.Forwarder made with no retries.
type Forwarder interface {
	Forward(ctx context.Context, req dispatch.Request) dispatch.Result
}

// Clock is the loop's time. Tests pass one they advance; nil is the
// system clock.
type Clock interface {
	Now() time.Time
	// Until returns a channel that receives once the clock reads at or
	// past t. An instant, not a duration: a wait computed from a reading
	// taken before the clock moved on still ends when it should.
	Until(t time.Time) <-chan time.Time
}

// Defaults for a Destination's and Options' zero fields.
const (
	DefaultMaxAge      = 72 * time.Hour
	DefaultConcurrency = 16
	// DefaultPoll is the longest a worker waits without looking at the
	// store: what bounds how late it sees a pause or resume made on
	// another node (docs/contract.md: within 2 seconds) and an event another
	// node enqueued.
	DefaultPoll = time.Second
	// MaxBackoff is the longest wait between two attempts of an event.
	MaxBackoff = 10 * time.Minute
)

// The outcome of an attempt, the outcome label of
// webhookd_delivery_attempts_total.
const (
	OutcomeDelivered   = "delivered"   // 2xx: COMPLETED
	OutcomeRejected    = "rejected"    // a permanent 4xx: FAILED
	OutcomeUnavailable = "unavailable" // QUEUED again, after a backoff
	OutcomeExpired     = "expired"     // max_age passed: FAILED with the last answer
	OutcomeDamaged     = "damaged"     // the stored request is not whole: FAILED, never sent
)

// Outcomes lists every outcome, for metrics that show them all from the
// start.
var Outcomes = []string{OutcomeDelivered, OutcomeRejected, OutcomeUnavailable, OutcomeExpired, OutcomeDamaged}

// Destination is one queue destination as the loop delivers to it.
type Destination struct {
	Name      string
	Forwarder Forwarder
	// MaxAge is how long after an event's arrival (or last redrive) an
	// attempt may start; DefaultMaxAge when zero.
	MaxAge time.Duration
	// Rate caps the attempts started in any one-second window on this
	// node; 0 is no limit.
	Rate float64
	// Concurrency caps the attempts open at once on this node;
	// DefaultConcurrency when zero.
	Concurrency int
}

// Backoff is how long the retry-th retry of an event waits (retry counts
// from 1).
type Backoff func(retry int) time.Duration

// DefaultBackoff waits a random time between half and all of
// min(1 s × 2^(retry−1), MaxBackoff) (JitterBackoff).
func DefaultBackoff(retry int) time.Duration { return JitterBackoff(retry, rand.Float64()) }

// JitterBackoff is DefaultBackoff with its random number r in [0, 1)
// given: half the ceiling plus r of the other half. The jitter spreads the
// retries of a burst that failed together.
func JitterBackoff(retry int, r float64) time.Duration {
	ceiling := MaxBackoff
	if retry < 1 {
		retry = 1
	}
	if retry <= 30 {
		ceiling = min(time.Second<<(retry-1), MaxBackoff)
	}
	return ceiling/2 + time.Duration(r*float64(ceiling/2))
}

// Options are the loop's dependencies.
type Options struct {
	Store   Store
	Clock   Clock         // the system clock if nil
	Backoff Backoff       // DefaultBackoff if nil
	Poll    time.Duration // DefaultPoll if zero
	// Provider names the provider of a source, sent as Webhook-Provider
	// (a source made from the environment is named after its provider:
	// nil, or "", sends the source's name).
	Provider func(source string) string
	// OnAttempt, if set, is called after each attempt is settled, with its
	// destination and outcome (metrics).
	OnAttempt func(destination, outcome string)
	// Busy, if set, reports whether the node's gateway-facing side is
	// saturated (receiver.Load). While it is, each destination keeps one
	// attempt open at most: on a node bound by its CPU, every attempt
	// started is an acknowledgement a gateway waits longer for, and a
	// queued event loses nothing by waiting (docs/delivery.md,
	// "Acknowledgements first"). One, not none, so that a node busy for
	// hours still delivers.
	Busy   func() bool
	Logger *slog.Logger // discarded if nil
}

// ErrInvalid is wrapped by every error New returns.
var ErrInvalid = errors.New("deliver: invalid destination")

// Loop delivers the queued events of every queue destination.
type Loop struct {
	opts    Options
	workers []*worker
	byName  map[string]*worker
}

// New checks dests and returns their loop; Run starts it.
func New(opts Options, dests []Destination) (*Loop, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: no store", ErrInvalid)
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l := &Loop{opts: opts, byName: map[string]*worker{}}
	for _, d := range dests {
		if err := dedupe.CheckDestination(d.Name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if _, dup := l.byName[d.Name]; dup {
			return nil, fmt.Errorf("%w: %q twice", ErrInvalid, d.Name)
		}
		switch {
		case d.Forwarder == nil:
			return nil, fmt.Errorf("%w: %q has no forwarder", ErrInvalid, d.Name)
		case d.MaxAge < 0, d.Rate < 0, d.Concurrency < 0:
			return nil, fmt.Errorf("%w: %q: negative max_age, rate or concurrency", ErrInvalid, d.Name)
		}
		if d.MaxAge == 0 {
			d.MaxAge = DefaultMaxAge
		}
		if d.Concurrency == 0 {
			d.Concurrency = DefaultConcurrency
		}
		w := &worker{Destination: d, opts: &l.opts, wake: make(chan struct{}, 1)}
		if d.Rate > 0 {
			w.window = newWindow(d.Rate)
		}
		l.workers = append(l.workers, w)
		l.byName[d.Name] = w
	}
	return l, nil
}

// Wake tells destination's worker that an event was enqueued, so that it
// takes it now rather than at its next poll. It never blocks; an unknown
// name is ignored.
func (l *Loop) Wake(destination string) {
	if w := l.byName[destination]; w != nil {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Run delivers until ctx ends, then waits for the attempts under way to be
// settled (each is bounded by its forwarder's timeout).
func (l *Loop) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx)
		}()
	}
	wg.Wait()
}

// worker delivers one destination's queue.
type worker struct {
	Destination
	opts   *Options
	wake   chan struct{}
	window *window // nil: no rate limit

	paused      bool
	pausedRead  time.Time // when paused was last read from the store
	pausedKnown bool
}

// result is one attempt's end, to settle.
type result struct {
	key        string
	settlement dedupe.Settlement
	outcome    string
}

// settleDelay bounds how long a finished attempt's answer waits for others
// to share its write: far inside any lease, so that waiting never costs
// one.
const settleDelay = 20 * time.Millisecond

// run takes, attempts and settles the destination's events. Each write is
// for many events: a pass settles every attempt that has ended since the
// last one (Store.Settle, one write) and takes as many due events as there
// are free slots (Take, one write), and under load it waits until half
// the destination's concurrency is free, so that the writes of a busy queue
// carry half its concurrency each instead of one event. A lone event is
// taken and settled at once, and an answer waits at most settleDelay.
func (w *worker) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	results := make(chan result, w.Concurrency)
	open := 0 // attempts whose result has not arrived
	pending := make([]result, 0, w.Concurrency)
	var firstPending time.Time
	collect := func(r result) {
		open--
		if len(pending) == 0 {
			firstPending = w.opts.Clock.Now()
		}
		pending = append(pending, r)
	}
	for {
		for drained := false; !drained; {
			select {
			case r := <-results:
				collect(r)
			default:
				drained = true
			}
		}
		if ctx.Err() != nil {
			for open > 0 {
				collect(<-results)
			}
			w.settle(context.WithoutCancel(ctx), pending)
			return
		}
		var until time.Time
		now := w.opts.Clock.Now()
		// batch is how many free slots a pass waits for while attempts
		// are open.
		limit := w.limit()
		free, batch := limit-open, (limit+1)/2
		if free >= batch || open == 0 || len(pending) > 0 && !now.Before(firstPending.Add(settleDelay)) {
			until = w.pass(ctx, now, pending, &open, results, &wg)
			pending = pending[:0]
			if until.IsZero() {
				continue
			}
		} else {
			until = now.Add(w.opts.Poll)
			if len(pending) > 0 {
				until = firstPending.Add(settleDelay)
			}
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case r := <-results:
			collect(r)
		case <-w.opts.Clock.Until(until):
		}
	}
}

// pass settles the attempts that ended (ended), takes what may start now
// and starts it; it returns when to pass again at the latest (zero: at
// once, more may be due). The settle and the take go to the store at once,
// so that they can share a commit, and the new attempts start only once
// both have returned: the attempts a crash can cut short (forwarded, their
// answers not yet written) are never more than the concurrency.
func (w *worker) pass(ctx context.Context, now time.Time, ended []result, open *int, results chan<- result, wg *sync.WaitGroup) time.Time {
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		w.settle(ctx, ended)
	}()
	defer func() { <-settled }()
	poll := now.Add(w.opts.Poll)
	if w.isPaused(ctx, now) {
		return poll
	}
	n := w.limit() - *open
	if n <= 0 {
		return poll // an attempt ending wakes the worker
	}
	if w.window != nil {
		if n = min(n, w.window.reserve(now, n)); n == 0 {
			return w.window.free(now)
		}
	}
	attempts, err := w.opts.Store.Take(ctx, w.Name, n)
	if w.window != nil {
		w.window.unreserve(n - len(attempts))
	}
	if err != nil {
		if ctx.Err() == nil {
			w.opts.Logger.Warn("deliver: cannot take queued events; they wait", "destination", w.Name, "error", err.Error())
		}
		return poll
	}
	<-settled
	for _, a := range attempts {
		*open++
		wg.Go(func() { results <- w.attempt(ctx, a) })
	}
	if len(attempts) == n {
		return time.Time{}
	}
	return w.nextDue(ctx, now, poll)
}

// limit is how many attempts may be open now: the concurrency, or one
// while the node is busy (Options.Busy).
func (w *worker) limit() int {
	if w.opts.Busy != nil && w.opts.Busy() {
		return 1
	}
	return w.Concurrency
}

// settle records the ends of attempts in one write, or each on its own
// when the store fails that write (Complete's answer is then written
// again until it lands), and reports each outcome.
func (w *worker) settle(ctx context.Context, rs []result) {
	if len(rs) == 0 {
		return
	}
	sts := make([]dedupe.Settlement, len(rs))
	for i, r := range rs {
		sts[i] = r.settlement
	}
	errs, err := w.opts.Store.Settle(ctx, sts)
	if err != nil {
		errs, _ = dedupe.SettleEach(ctx, w.opts.Store, sts)
	}
	for i, r := range rs {
		if errs[i] != nil {
			// The lease passes and the event comes due again: nothing is
			// lost, and the core dedupes a second delivery by
			// Idempotency-Key.
			w.opts.Logger.Warn("deliver: could not record an attempt; it is retried when its lease passes",
				"destination", w.Name, "key", r.key, "outcome", r.outcome, "error", errs[i].Error())
		}
		if w.opts.OnAttempt != nil {
			w.opts.OnAttempt(w.Name, r.outcome)
		}
	}
}

// nextDue is when the destination's next event is due, within the poll
// interval.
func (w *worker) nextDue(ctx context.Context, now, poll time.Time) time.Time {
	at, ok, err := w.opts.Store.NextDue(ctx, w.Name)
	if err != nil || !ok || at.After(poll) {
		return poll
	}
	// An event due already but not taken is under another node's lease
	// or just settled: look again shortly, not in a spin.
	return maxTime(at, now.Add(10*time.Millisecond))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// isPaused reads the destination's pause flag, from the store at most
// once a poll interval.
func (w *worker) isPaused(ctx context.Context, now time.Time) bool {
	if w.pausedKnown && now.Sub(w.pausedRead) < w.opts.Poll && now.Sub(w.pausedRead) >= 0 {
		return w.paused
	}
	p, err := w.opts.Store.Paused(ctx)
	if err != nil {
		// Unknown: deliver nothing until it is known, as a paused
		// destination would.
		w.opts.Logger.Warn("deliver: cannot read the pause flags", "destination", w.Name, "error", err.Error())
		return true
	}
	w.paused, w.pausedRead, w.pausedKnown = p[w.Name].Paused, now, true
	return w.paused
}

// attempt forwards a's event once and says how to settle the attempt.
func (w *worker) attempt(ctx context.Context, a dedupe.Attempt) result {
	if w.window != nil {
		// The start counts from now, when the request goes, not from the
		// pass that reserved it: that is the time the core sees.
		w.window.start(w.opts.Clock.Now())
	}
	rec := &a.Record
	deadline := rec.QueuedAt.Add(w.MaxAge)
	r := result{key: rec.Key}
	fail := func(outcome string, resp dedupe.Response, reason string) result {
		r.outcome = outcome
		r.settlement = dedupe.Settlement{Lease: a.Lease, Outcome: dedupe.SettleFail, Response: resp, Reason: reason}
		return r
	}
	switch {
	case rec.Request == nil || len(rec.Request.Body) != rec.Request.Size:
		return fail(OutcomeDamaged, lastAnswer(rec), "the stored request is not whole (it is never sent in part)")
	case w.opts.Clock.Now().After(deadline):
		return fail(OutcomeExpired, lastAnswer(rec), w.expired(rec))
	}
	key, err := dedupe.ParseKey(rec.Key)
	if err != nil {
		return fail(OutcomeDamaged, lastAnswer(rec), "the stored key does not parse: "+err.Error())
	}
	provider := ""
	if w.opts.Provider != nil {
		provider = w.opts.Provider(key.Source)
	}
	res := w.Forwarder.Forward(ctx, dispatch.NewRequest(key, provider, rec.Request.EventType, rec.Request.ContentType, rec.Request.Body))
	resp := dedupe.Response{Status: res.Status, ContentType: res.ContentType, Body: res.Body}
	switch res.Outcome {
	case dispatch.Delivered:
		r.outcome = OutcomeDelivered
		r.settlement = dedupe.Settlement{Lease: a.Lease, Outcome: dedupe.SettleComplete, Response: resp}
		return r
	case dispatch.Rejected:
		return fail(OutcomeRejected, resp, fmt.Sprintf("the destination rejected it (%d)", res.Status))
	}
	if resp.Status == 0 {
		resp = unavailable(res.Err)
	}
	next := w.opts.Clock.Now().Add(w.opts.Backoff(int(rec.Retries) + 1))
	if next.After(deadline) {
		rec.Response = resp
		return fail(OutcomeExpired, resp, w.expired(rec))
	}
	r.outcome = OutcomeUnavailable
	r.settlement = dedupe.Settlement{Lease: a.Lease, Outcome: dedupe.SettleRetry, Response: resp, Next: next}
	return r
}

func (w *worker) expired(rec *dedupe.Record) string {
	return fmt.Sprintf("max_age %s passed since %s with the destination unavailable (last answer %d)",
		w.MaxAge, rec.QueuedAt.Format(time.RFC3339), lastAnswer(rec).Status)
}

// lastAnswer is rec's last answer, or a 503 when it has none.
func lastAnswer(rec *dedupe.Record) dedupe.Response {
	if rec.Response.Status != 0 {
		return rec.Response
	}
	return unavailable(nil)
}

// unavailable is what is recorded of an attempt that got no answer: a 503,
// with the reason when there is one (dispatch redacts the URL from it).
func unavailable(err error) dedupe.Response {
	r := dedupe.Response{Status: 503, ContentType: "text/plain; charset=utf-8"}
	if err != nil {
		r.Body = []byte(err.Error())
	}
	return r
}

// window bounds attempt starts: at most n in any span, n the rate rounded
// down (at least 1) and span a second (1/rate for a rate below one), so
// that no one-second window holds more starts than the rate. It remembers
// the last n starts, in a ring whose next slot is the oldest. golang.org/x/time/rate's
// token bucket would let a full bucket's burst and the refill meet in one
// window; this never exceeds the rate in any window, and reads the loop's
// clock.
type window struct {
	mu     sync.Mutex
	starts []time.Time
	next   int
	span   time.Duration
	// reserved counts the starts a pass has allowed whose attempts have
	// not started yet (start records them).
	reserved int
}

func newWindow(rate float64) *window {
	n := max(1, int(rate))
	return &window{starts: make([]time.Time, n), span: max(time.Second, time.Duration(float64(n)/rate*float64(time.Second)))}
}

// reserve allows up to n starts at now and returns how many; each is
// recorded by start, or given back by unreserve.
func (w *window) reserve(now time.Time, n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n = max(0, min(n, w.available(now)-w.reserved))
	w.reserved += n
	return n
}

// unreserve gives back n reserved starts that will not happen.
func (w *window) unreserve(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reserved = max(0, w.reserved-n)
}

// start records a reserved start at now.
func (w *window) start(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reserved = max(0, w.reserved-1)
	w.record(now)
}

// available counts the starts allowed at now, reserved ones included.
func (w *window) available(now time.Time) int {
	c := 0
	for i := range w.starts {
		at := w.starts[(w.next+i)%len(w.starts)]
		if !at.IsZero() && now.Sub(at) < w.span {
			break
		}
		c++
	}
	return c
}

// free is when a start is allowed again.
func (w *window) free(now time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maxTime(w.starts[w.next].Add(w.span), now.Add(time.Millisecond))
}

// record notes a start at now.
func (w *window) record(now time.Time) {
	w.starts[w.next] = now
	w.next = (w.next + 1) % len(w.starts)
}

type systemClock struct{}

func (systemClock) Now() time.Time                     { return time.Now() }
func (systemClock) Until(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }
