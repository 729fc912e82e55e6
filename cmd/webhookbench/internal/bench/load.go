package bench

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// newClient returns the load client: one pooled transport with an idle
// connection kept for every concurrent client, so that the load tool opens
// no connection per delivery and is not what the figures measure.
func newClient(c int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        2 * c,
			MaxIdleConnsPerHost: 2 * c,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// sendResult is one answered (or failed) delivery.
type sendResult struct {
	status int // 0: no answer (connection refused, reset, timeout)
	start  time.Time
	end    time.Time // when the status line arrived, or the error
}

// send posts e once to url and reads the whole answer.
func send(ctx context.Context, client *http.Client, url string, e *event) sendResult {
	r := sendResult{start: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(e.body))
	if err != nil {
		r.end = time.Now()
		return r
	}
	req.Header = e.header()
	resp, err := client.Do(req)
	r.end = time.Now()
	if err != nil {
		e.sent.Add(1)
		return r
	}
	discard(resp.Body)
	r.status = resp.StatusCode
	e.sent.Add(1)
	if r.status >= 200 && r.status <= 299 {
		e.ok.Add(1)
	}
	return r
}

// loadSpec is one load run.
type loadSpec struct {
	// url returns the delivery URL; it is read per delivery, because a
	// restarted target may listen elsewhere.
	url    func() string
	client *http.Client
	run    string // event id prefix
	u, d   int
	dup    string
	c      int
	// duration, when positive, sends blocks of u fresh events until it
	// passes; otherwise count deliveries are sent (u*d when 0).
	duration time.Duration
	count    int
	// keep records every delivery with its event, for crash mode.
	keep bool
	// stop, when not nil, ends a duration run early once closed.
	stop <-chan struct{}
}

// delivery is one kept record.
type delivery struct {
	ev *event
	sendResult
}

// loadResult is what a load run measured.
type loadResult struct {
	elapsed    time.Duration
	deliveries int
	latencies  []time.Duration // sorted
	statuses   map[int]int
	events     []*event   // every event built, in order
	kept       []delivery // when spec.keep
}

// perSecond is deliveries answered per second.
func (r *loadResult) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.deliveries) / r.elapsed.Seconds()
}

// quantile returns the q-quantile of the latencies (nearest rank).
func (r *loadResult) quantile(q float64) time.Duration { return quantileOf(r.latencies, q) }

// runLoad sends spec's deliveries from spec.c clients and waits for every
// answer.
func runLoad(ctx context.Context, spec loadSpec) *loadResult {
	return planLoad(ctx, spec).run(ctx)
}

// loadPlan is a load whose events are built and signed ahead of its
// clients: a run's figures are the target's and its clients', not the
// feeder's. Building and signing an event takes microseconds
// (BenchmarkNewEvent), so a burst built on the clock would open with a
// pause in which no delivery goes, and a duration run's clients would wait
// for each new block while the feeder signs it.
type loadPlan struct {
	spec   loadSpec
	blocks chan []*event // each in the order it is sent (schedule)
	quit   chan struct{} // closed by run: the builder stops
}

// planLoad builds spec's load: for a count-bounded run every block before
// it returns, for a duration run the first, and the next ones in the
// background, each built while the one before it is being sent.
func planLoad(ctx context.Context, spec loadSpec) *loadPlan {
	if spec.count == 0 {
		spec.count = spec.u * spec.d
	}
	sign := newSigner()
	block := func(b int) []*event {
		evs := make([]*event, spec.u)
		now := time.Now()
		for i := range evs {
			evs[i] = newEvent(eventID(spec.run, b, i), b*spec.u+i, now, sign)
		}
		return evs
	}
	pl := &loadPlan{spec: spec, quit: make(chan struct{})}
	if spec.duration <= 0 {
		n := (spec.count + spec.u*spec.d - 1) / (spec.u * spec.d)
		pl.blocks = make(chan []*event, n)
		for b := range n {
			pl.blocks <- block(b)
		}
		close(pl.blocks)
		return pl
	}
	// One block waits, built, while the one before it is sent.
	pl.blocks = make(chan []*event, 1)
	pl.blocks <- block(0)
	go func() {
		defer close(pl.blocks)
		for b := 1; ; b++ {
			evs := block(b)
			select {
			case pl.blocks <- evs:
			case <-pl.quit:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return pl
}

// run sends the plan's deliveries from spec.c clients and waits for every
// answer; the clock starts here.
func (pl *loadPlan) run(ctx context.Context) *loadResult {
	spec := pl.spec
	defer close(pl.quit)
	res := &loadResult{statuses: make(map[int]int)}
	queue := make(chan *event, 4*spec.c)

	// The feeder hands out each block's deliveries as the clients take them.
	go func() {
		defer close(queue)
		var deadline <-chan time.Time
		if spec.duration > 0 {
			t := time.NewTimer(spec.duration)
			defer t.Stop()
			deadline = t.C
		}
		sent := 0
		for evs := range pl.blocks {
			res.events = append(res.events, evs...)
			for _, e := range schedule(evs, spec.d, spec.dup) {
				if spec.duration <= 0 && sent == spec.count {
					return
				}
				select {
				case queue <- e:
					sent++
				case <-deadline:
					return
				case <-spec.stop:
					return
				case <-ctx.Done():
					return
				}
			}
		}
	}()

	type worker struct {
		lat      []time.Duration
		statuses map[int]int
		kept     []delivery
	}
	workers := make([]worker, spec.c)
	var wg sync.WaitGroup
	var refused atomic.Int64
	start := time.Now()
	for i := range workers {
		w := &workers[i]
		w.statuses = make(map[int]int)
		w.lat = make([]time.Duration, 0, 1024)
		wg.Go(func() {
			for e := range queue {
				r := send(ctx, spec.client, spec.url(), e)
				w.lat = append(w.lat, r.end.Sub(r.start))
				w.statuses[r.status]++
				if spec.keep {
					w.kept = append(w.kept, delivery{ev: e, sendResult: r})
				}
				if r.status == 0 {
					// The target is down (crash mode restarts it): do not
					// spin through the queue while it comes back.
					refused.Add(1)
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	for _, w := range workers {
		res.latencies = append(res.latencies, w.lat...)
		for s, n := range w.statuses {
			res.statuses[s] += n
		}
		res.kept = append(res.kept, w.kept...)
	}
	res.deliveries = len(res.latencies)
	slices.Sort(res.latencies)
	return res
}

// onceResult is the exactly-once tally of a run: what the stub saw of the
// events the client sent.
type onceResult struct {
	events    int // events with at least one delivery answered or failed
	answered  int // events with at least one 2xx answer
	zero      int // events the stub never saw
	once      int // events the stub saw exactly once
	more      int // events the stub saw more than once
	lost      int // answered 2xx, yet the stub never saw them
	wrongKeys int // events forwarded with a missing or varying Idempotency-Key
}

// tallyOnce compares the client's events with the stub's records.
// wantKeys says the target sets Idempotency-Key (the bare proxy does not).
func tallyOnce(events []*event, seen map[string]stubEvent, wantKeys bool) onceResult {
	var o onceResult
	for _, e := range events {
		if e.sent.Load() == 0 {
			continue
		}
		o.events++
		ok := e.ok.Load() > 0
		if ok {
			o.answered++
		}
		s := seen[e.id]
		switch {
		case s.forwards == 0:
			o.zero++
			if ok {
				o.lost++
			}
		case s.forwards == 1:
			o.once++
		default:
			o.more++
		}
		if wantKeys && s.forwards > 0 {
			if _, good := s.keys["stripe:"+e.id]; !good || len(s.keys) != 1 {
				o.wrongKeys++
			}
		}
	}
	return o
}
