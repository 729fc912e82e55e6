package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
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
}

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
	// delivery of theirs was under way at a kill.
	extraNotInFlight int
	wrongKeys        int
}

// ok reports whether crash mode's assertions hold.
func (r *crashReport) ok() bool {
	return r.lost == 0 && r.unresolved == 0 && r.extraNotInFlight == 0 && r.wrongKeys == 0 && r.kills > 0
}

func (r *crashReport) String() string {
	verdict := "PASS"
	if !r.ok() {
		verdict = "FAIL"
	}
	return fmt.Sprintf(`| kills (SIGKILL, then restart on the same store) | %d |
| deliveries under load | %d (%s) |
| resends after the kills (lease passed) | %d |
| events sent | %d |
| events with a delivery under way at a kill | %d |
| events forwarded once | %d |
| events forwarded more than once | %d (of which not under way at a kill: %d) |
| events lost (never forwarded) | %d |
| events never answered 2xx | %d |
| events forwarded with a missing or varying Idempotency-Key | %d |
| verdict | %s |
`, r.kills, r.deliveries, statusString(r.statuses), r.resends, r.events, r.inFlight, r.once, r.more,
		r.extraNotInFlight, r.lost, r.unresolved, r.wrongKeys, verdict)
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
	p.stop()

	r := tallyCrash(res.events, res.kept, kills, st.snapshot())
	r.deliveries, r.statuses, r.resends = res.deliveries, res.statuses, len(resent)
	return r, nil
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
