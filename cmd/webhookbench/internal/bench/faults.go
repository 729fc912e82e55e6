package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// faultsOpts configure faults mode.
type faultsOpts struct {
	variant        string
	u, d, c        int
	dup            string
	lease, timeout time.Duration
	pgDSN, redis   string
}

// faultsReport is what faults mode found.
type faultsReport struct {
	variant    string
	deliveries int
	statuses   map[int]int
	resends    int
	stub       map[string]int64 // requests per downstream behaviour
	events     int
	unresolved int // events never answered 2xx
	// early counts 2xx answers given before the stub had accepted the
	// event: an acknowledgement of something the core service never took.
	early      int
	acceptedOK int // events the stub accepted exactly once
	// acceptedTwice counts events the stub accepted more than once;
	// acceptedNever, events it never accepted.
	acceptedTwice, acceptedNever int
}

func (r *faultsReport) ok() bool {
	return r.early == 0 && r.unresolved == 0 && r.acceptedTwice == 0 && r.acceptedNever == 0 && r.events > 0
}

func (r *faultsReport) String() string {
	verdict := "PASS"
	if !r.ok() {
		verdict = "FAIL"
	}
	var stub []string
	for _, n := range faultNames {
		stub = append(stub, fmt.Sprintf("%s: %d", n, r.stub[n]))
	}
	return fmt.Sprintf(`| design | %s |
| deliveries (first pass) | %d |
| resends until every event had a 2xx | %d |
| answers to the client (all) | %s |
| requests the downstream got, by behaviour | %s |
| events | %d |
| 2xx answered before the downstream accepted | %d |
| events accepted (200) exactly once | %d |
| events accepted more than once | %d |
| events never accepted | %d |
| events never answered 2xx | %d |
| verdict | %s |
`, variantLabels[r.variant], r.deliveries, r.resends, statusString(r.statuses), strings.Join(stub, ", "),
		r.events, r.early, r.acceptedOK, r.acceptedTwice, r.acceptedNever, r.unresolved, verdict)
}

// faults runs a design in front of a downstream that cycles 503, a
// timeout, a connection reset and 200; sends every event d times, then
// resends each until it is answered 2xx; and checks that no 2xx answer
// came before the downstream accepted the event, and that the downstream
// accepted every event exactly once.
func (e *env) faults(ctx context.Context, o faultsOpts, log io.Writer) (*faultsReport, error) {
	// A timeout request is held until the caller gives up, or a little
	// past its budget if it does not.
	st, err := newStub(true, o.timeout+2*time.Second)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	p, cleanup, err := e.startVariant(ctx, o.variant, targetOpts{
		downstream: st.URL, lease: o.lease, dispatchTimeout: o.timeout,
		pgDSN: o.pgDSN, redisAddr: o.redis, dir: filepath.Join(e.tmp, "faults-"+o.variant),
	})
	if err != nil {
		return nil, err
	}
	defer cleanup()
	client := newClient(o.c, o.timeout+30*time.Second)
	defer client.CloseIdleConnections()
	url := p.url()
	res := runLoad(ctx, loadSpec{url: func() string { return url }, client: client, run: newRunID(),
		u: o.u, d: o.d, dup: o.dup, c: o.c, keep: true})
	fmt.Fprintf(log, "first pass: %d deliveries, %s\n", res.deliveries, statusString(res.statuses))

	var pending []*event
	for _, ev := range res.events {
		if ev.sent.Load() > 0 && ev.ok.Load() == 0 {
			pending = append(pending, ev)
		}
	}
	resent := resendUntilOK(ctx, client, url, pending, o.c, time.Now().Add(max(60*time.Second, 20*o.lease)))

	r := tallyFaults(res.events, append(res.kept, resent...), st.snapshot())
	r.variant, r.deliveries, r.resends, r.stub = o.variant, res.deliveries, len(resent), st.faultCounts()
	return r, nil
}

// tallyFaults checks every answer (answers) to the events sent against
// what the stub accepted (seen) and when.
func tallyFaults(events []*event, answers []delivery, seen map[string]stubEvent) *faultsReport {
	r := &faultsReport{statuses: make(map[int]int)}
	for _, d := range answers {
		r.statuses[d.status]++
		if d.status >= 200 && d.status <= 299 {
			if a := seen[d.ev.id].firstAccept; a.IsZero() || !a.Before(d.end) {
				r.early++
			}
		}
	}
	for _, ev := range events {
		if ev.sent.Load() == 0 {
			continue
		}
		r.events++
		if ev.ok.Load() == 0 {
			r.unresolved++
		}
		switch n := seen[ev.id].accepted; {
		case n == 1:
			r.acceptedOK++
		case n == 0:
			r.acceptedNever++
		default:
			r.acceptedTwice++
		}
	}
	return r
}
