package bench

import (
	"context"
	"fmt"
	"time"
)

// A queue destination (delivery: queue) answers the gateway once the event
// is stored and reaches the core later, from webhookd's delivery loop: a
// run against one ends when the queue has drained, which only the core
// (the stub) can tell from outside.

// drainPoll is how often a drain's wait looks at the stub.
const drainPoll = 20 * time.Millisecond

// drainResult is how a wait for the queue to drain ended.
type drainResult struct {
	took    time.Duration // from the start of the wait to its end
	missing int           // events answered 2xx that never reached the stub
	timeout time.Duration // the wait's bound
}

// drained reports whether every event reached the core.
func (d drainResult) drained() bool { return d.missing == 0 }

func (d drainResult) String() string {
	if d.drained() {
		return fmt.Sprintf("drained: the core had every event %s into the wait", d.took.Round(time.Millisecond))
	}
	return fmt.Sprintf("NOT drained: %d events answered 2xx never reached the core within %s", d.missing, d.timeout)
}

// waitDrained waits until every event of events answered 2xx has reached
// st, then, when quiet is positive, until st has seen no forward for quiet
// (the attempts a crash cut short come due again only when their lease
// passes), all within timeout.
func waitDrained(ctx context.Context, st *stub, events []*event, quiet, timeout time.Duration) drainResult {
	var ids []string
	for _, ev := range events {
		if ev.ok.Load() > 0 {
			ids = append(ids, ev.id)
		}
	}
	start := time.Now()
	deadline := start.Add(timeout)
	res := drainResult{timeout: timeout}
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		if res.missing = st.missing(ids); res.missing == 0 || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			res.took = time.Since(start)
			return res
		case <-tick.C:
		}
	}
	res.took = time.Since(start)
	if res.missing > 0 || quiet <= 0 {
		return res
	}
	last, lastAt := st.total.Load(), time.Now()
	for time.Since(lastAt) < quiet && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return res
		case <-tick.C:
		}
		if n := st.total.Load(); n != last {
			last, lastAt = n, time.Now()
		}
	}
	return res
}
