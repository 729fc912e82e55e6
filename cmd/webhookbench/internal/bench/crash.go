package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// crashOpts configure crash mode.
type crashOpts struct {
	kills          int
	u, d, c        int
	dup            string
	lease, timeout time.Duration
	// gapMin and gapMax bound the time under load before each kill.
	gapMin, gapMax time.Duration
	store          string // lmdb, postgres or tiered
	pgDSN          string
	// delivery is the one destination's: deliverySync (the default) or
	// deliveryQueue (store and forward, docs/delivery.md).
	delivery string
	// drainTimeout bounds the wait, after the resends, for a queue
	// destination's queue to reach the core.
	drainTimeout time.Duration
}

// The destination's delivery in crash mode.
const (
	deliverySync  = "sync"
	deliveryQueue = "queue"
)

// crashConcurrency is the queue destination's concurrency in crash mode:
// at most this many attempts are open at a kill, so at most this many
// events can reach the core again because of one kill.
const crashConcurrency = 16

// crashReport is what crash mode found.
type crashReport struct {
	kills      int
	deliveries int
	statuses   map[int]int
	resends    int
	events     int // events sent at least once
	inFlight   int // events with a delivery under way at a kill
	once, more int // events the stub saw once, more than once
	lost       int // events the stub never saw
	unresolved int // events never answered 2xx, even after the resends
	// extraNotInFlight counts events forwarded more than once although no
	// delivery of theirs was under way at a kill (sync), or a forward of
	// theirs followed the one before it without a kill between that could
	// have cut that attempt short (queue).
	extraNotInFlight int
	wrongKeys        int

	// Against a queue destination only.
	queue bool
	// cutShort counts forwards that followed a kill which cut short the
	// attempt before them: the attempts in flight at the kills.
	cutShort int
	// mostAtOneKill is the most of those one kill caused; at most
	// crashConcurrency attempts are open at once.
	mostAtOneKill int
	drain         drainResult
}

// ok reports whether crash mode's assertions hold.
func (r *crashReport) ok() bool {
	ok := r.lost == 0 && r.unresolved == 0 && r.extraNotInFlight == 0 && r.wrongKeys == 0 && r.kills > 0
	if r.queue {
		ok = ok && r.drain.drained() && r.mostAtOneKill <= crashConcurrency
	}
	return ok
}

func (r *crashReport) String() string {
	verdict := "PASS"
	if !r.ok() {
		verdict = "FAIL"
	}
	var b strings.Builder
	row := func(name string, format string, args ...any) {
		fmt.Fprintf(&b, "| %s | %s |\n", name, fmt.Sprintf(format, args...))
	}
	row("kills (SIGKILL, then restart on the same store)", "%d", r.kills)
	row("deliveries under load", "%d (%s)", r.deliveries, statusString(r.statuses))
	row("resends after the kills (lease passed)", "%d", r.resends)
	row("events sent", "%d", r.events)
	row("events with a delivery under way at a kill", "%d", r.inFlight)
	if r.queue {
		row("queue after the resends", "%s", r.drain)
		row("attempts cut short by a kill, forwarded again", "%d (at most %d at one kill; bound %d, the concurrency)",
			r.cutShort, r.mostAtOneKill, crashConcurrency)
	}
	row("events forwarded once", "%d", r.once)
	if r.queue {
		row("events forwarded more than once", "%d (of which without a kill cutting an attempt short: %d)", r.more, r.extraNotInFlight)
	} else {
		row("events forwarded more than once", "%d (of which not under way at a kill: %d)", r.more, r.extraNotInFlight)
	}
	row("events lost (never forwarded)", "%d", r.lost)
	row("events never answered 2xx", "%d", r.unresolved)
	row("events forwarded with a missing or varying Idempotency-Key", "%d", r.wrongKeys)
	row("verdict", "%s", verdict)
	return b.String()
}

// crash runs webhookd under load, kills it with SIGKILL o.kills times at
// random moments and restarts it on the same store; then, once the leases
// of the claims the kills left behind have passed, resends every event
// until it is answered 2xx, and checks what the stub received.
func (e *env) crash(ctx context.Context, o crashOpts, log io.Writer) (*crashReport, error) {
	st, err := newStub(false, 0)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	dir := filepath.Join(e.tmp, "crash")
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	extra := []string{"WEBHOOKD_LEASE=" + o.lease.String(), "WEBHOOKD_DISPATCH_TIMEOUT=" + o.timeout.String(),
		"WEBHOOKD_STORE_TIMEOUT=" + storeTimeout(o.lease, o.timeout).String()}
	if o.store == variantPostgres || o.store == variantTiered {
		if o.pgDSN == "" {
			return nil, errNoPostgres
		}
		dsn, drop, err := pgSchema(ctx, o.pgDSN)
		if err != nil {
			return nil, err
		}
		defer drop()
		extra = append(extra, "WEBHOOKD_STORE="+o.store, "WEBHOOKD_POSTGRES_DSN="+dsn)
	}
	if o.delivery == deliveryQueue {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		file := filepath.Join(dir, "queue.yaml")
		if err := os.WriteFile(file, []byte(queueConfig(st.URL, crashConcurrency)), 0o600); err != nil {
			return nil, err
		}
		extra = append(extra, "WEBHOOKD_CONFIG="+file)
	}
	dataDir, logPath := filepath.Join(dir, "data"), filepath.Join(e.tmp, "crash.log")
	start := func() (*proc, error) { return e.startWebhookd(addr, dataDir, st.URL, logPath, extra...) }
	p, err := start()
	if err != nil {
		return nil, err
	}
	defer func() { p.stop() }()

	url := "http://" + addr + webhookPath
	client := newClient(o.c, 10*time.Second)
	defer client.CloseIdleConnections()
	stop := make(chan struct{})
	loaded := make(chan *loadResult)
	go func() {
		loaded <- runLoad(ctx, loadSpec{url: func() string { return url }, client: client, run: newRunID(),
			u: o.u, d: o.d, dup: o.dup, c: o.c, duration: time.Hour, keep: true, stop: stop})
	}()

	// kills holds [just before SIGKILL, process gone] for each kill.
	var kills [][2]time.Time
	for k := 1; k <= o.kills; k++ {
		gap := o.gapMin + rand.N(o.gapMax-o.gapMin+1)
		select {
		case <-time.After(gap):
		case <-ctx.Done():
			close(stop)
			<-loaded
			return nil, ctx.Err()
		}
		before := time.Now()
		p.kill()
		kills = append(kills, [2]time.Time{before, time.Now()})
		fmt.Fprintf(log, "kill %d after %s under load\n", k, gap.Round(time.Millisecond))
		if p, err = start(); err != nil {
			close(stop)
			<-loaded
			return nil, fmt.Errorf("restart after kill %d: %w", k, err)
		}
	}
	time.Sleep(o.gapMin) // a last stretch of load on the restarted process
	close(stop)
	res := <-loaded

	// Claims the last kills left behind hold their keys until their lease
	// passes; before that a resend would only get 409.
	time.Sleep(o.lease + 500*time.Millisecond)
	var sent []*event
	for _, ev := range res.events {
		if ev.sent.Load() > 0 {
			sent = append(sent, ev)
		}
	}
	resent := resendUntilOK(ctx, client, url, sent, o.c, time.Now().Add(max(30*time.Second, 10*o.lease)))
	var drain drainResult
	if o.delivery == deliveryQueue {
		// Every acknowledged event is stored; the core has it only once
		// the delivery loop has drained the queue, and an attempt the
		// last kill cut short comes due again when its lease passes:
		// wait until the stub has every event and has been quiet for a
		// lease.
		drain = waitDrained(ctx, st, sent, o.lease+time.Second, o.drainTimeout)
		fmt.Fprintf(log, "queue: %s\n", drain)
	}
	p.stop()

	var r *crashReport
	if o.delivery == deliveryQueue {
		r = tallyQueueCrash(res.events, res.kept, kills, st.snapshot(), o.lease)
		r.drain = drain
	} else {
		r = tallyCrash(res.events, res.kept, kills, st.snapshot())
	}
	r.deliveries, r.statuses, r.resends = res.deliveries, res.statuses, len(resent)
	return r, nil
}

// tallyQueueCrash is tallyCrash for a queue destination, where the
// gateway's answer comes before the forward: an extra forward is allowed
// only after a kill that came, within a lease, after the event's forward
// before it (that attempt reached the core, and the kill took its answer
// before it was recorded).
func tallyQueueCrash(events []*event, kept []delivery, kills [][2]time.Time, seen map[string]stubEvent, lease time.Duration) *crashReport {
	r := tallyCrash(events, kept, kills, seen)
	r.queue, r.extraNotInFlight = true, 0
	perKill := make([]int, len(kills))
	for _, ev := range events {
		if ev.sent.Load() == 0 {
			continue
		}
		s := seen[ev.id]
		explained := true
		for i := 1; i < len(s.arrivals); i++ {
			k := cutShortBy(kills, s.arrivals[i-1], s.arrivals[i], lease)
			if k < 0 {
				explained = false
				continue
			}
			perKill[k]++
			r.cutShort++
		}
		if !explained {
			r.extraNotInFlight++
		}
	}
	for _, n := range perKill {
		r.mostAtOneKill = max(r.mostAtOneKill, n)
	}
	return r
}

// cutShortBy returns the first kill that can have cut short an attempt
// forwarded at prev, so that the event was forwarded again at next: the
// process was still alive at prev, the kill came within a lease of it
// (after that the lease would have passed anyway), and before next; or -1.
func cutShortBy(kills [][2]time.Time, prev, next time.Time, lease time.Duration) int {
	for i, k := range kills {
		if !prev.After(k[1]) && k[0].Sub(prev) <= lease && !next.Before(k[0]) {
			return i
		}
	}
	return -1
}

// tallyCrash checks what the stub saw (seen) against the events sent, the
// deliveries made under load (kept) and the kill windows ([just before
// SIGKILL, process gone]).
func tallyCrash(events []*event, kept []delivery, kills [][2]time.Time, seen map[string]stubEvent) *crashReport {
	r := &crashReport{kills: len(kills)}
	inFlight := make(map[*event]bool)
	for _, d := range kept {
		for _, k := range kills {
			if !d.start.After(k[1]) && !d.end.Before(k[0]) {
				inFlight[d.ev] = true
			}
		}
	}
	r.inFlight = len(inFlight)
	for _, ev := range events {
		if ev.sent.Load() == 0 {
			continue
		}
		r.events++
		s := seen[ev.id]
		switch {
		case s.forwards == 0:
			r.lost++
		case s.forwards == 1:
			r.once++
		default:
			r.more++
			if !inFlight[ev] {
				r.extraNotInFlight++
			}
		}
		if ev.ok.Load() == 0 {
			r.unresolved++
		}
		if _, good := s.keys["stripe:"+ev.id]; s.forwards > 0 && (!good || len(s.keys) != 1) {
			r.wrongKeys++
		}
	}
	return r
}

// storeTimeout fits WEBHOOKD_STORE_TIMEOUT into a short test lease: serve
// requires the lease to exceed the dispatch timeout plus twice the store
// timeout, so a third of what the lease leaves over the dispatch timeout
// satisfies it (2s and 1s give 333ms, ample for a local disk or Postgres).
func storeTimeout(lease, dispatch time.Duration) time.Duration {
	return (lease - dispatch) / 3
}
