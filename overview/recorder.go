// Package overview keeps the figures of the console's overview page and of
// GET /api/summary (docs/observability.md): per provider, the deliveries of
// the last 15 minutes, hour or day by outcome, the share that reached the
// core service, the core's latency and the FAILED records waiting for a
// redrive.
//
// The delivery figures are counted in this process, one row of counters per
// provider and minute in a ring of a day's minutes (Recorder), fed by the
// receiver's Config.OnDelivery: a restart starts them at zero, and with
// several nodes each one shows its own share of the traffic (Prometheus,
// which scrapes them all, is where the fleet's figures add up). The FAILED
// figures are read from the store, which every node shares, so they are the
// fleet's.
//
// It must never hold a body, a key or anything a provider sent besides the
// provider's name and the outcome: the ring is counters only.
package overview

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webhookd/webhookd/receiver"
)

// UnknownProvider is the row of deliveries to a provider that is not
// configured, as metrics.UnknownProvider is their label.
const UnknownProvider = "unknown"

// ringMinutes is how many minutes the ring keeps: the longest window.
const ringMinutes = 24 * 60

// LatencyBuckets are the upper bounds, in seconds, of the core latency
// histogram: webhookd_dispatch_duration_seconds's, so that the overview's
// p50 and p99 are the ones a Grafana panel computes with histogram_quantile
// from the same observations.
var LatencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Recorder counts deliveries per provider, minute and outcome, and the core
// service's latency per provider and minute. It is safe for concurrent use;
// Observe costs one uncontended lock per delivery of a provider.
type Recorder struct {
	now      func() time.Time
	outcomes []receiver.Outcome
	index    map[receiver.Outcome]int
	reasons  []string
	rindex   map[string]int // a reason's counter, after the outcomes'
	width    int            // counters per minute: outcomes, reasons, then latency buckets and +Inf
	// known are the configured names; SetProviders replaces them on a
	// reload.
	known atomic.Pointer[map[string]bool]

	mu    sync.RWMutex
	rings map[string]*ring
	// dests are the rings of each source's destinations (destWidth
	// counters a minute): the destination's share delivered. The names
	// come from the configuration's routes, never from a request.
	dests map[string]map[string]*ring
}

// A destination's counters a minute: the deliveries that reached it (it
// answered: forwarded or core_rejected), those that did not (unavailable),
// and those stored QUEUED for it (a queue destination, which webhookd
// delivers itself).
const (
	destReached = iota
	destUnavailable
	destQueued
	destWidth
)

// ring is one provider's counters: ringMinutes rows of width counters, and
// the minute each row holds (a row whose minute is not the one asked for is
// stale, and counts as zero).
type ring struct {
	mu      sync.Mutex
	minutes []int64
	cells   []uint32
}

// NewRecorder returns a Recorder for the configured providers; deliveries
// to any other name are counted as UnknownProvider, so that a scan of
// made-up routes cannot grow it. now is the clock; time.Now if nil.
func NewRecorder(providers []string, now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	rec := &Recorder{
		now:      now,
		outcomes: receiver.Outcomes(),
		index:    map[receiver.Outcome]int{},
		rings:    map[string]*ring{},
		dests:    map[string]map[string]*ring{},
	}
	for i, o := range rec.outcomes {
		rec.index[o] = i
	}
	rec.reasons, rec.rindex = receiver.Reasons(), map[string]int{}
	for i, r := range rec.reasons {
		rec.rindex[r] = len(rec.outcomes) + i
	}
	rec.width = rec.latencyStart() + len(LatencyBuckets) + 1
	rec.SetProviders(providers)
	return rec
}

// SetProviders replaces the configured names (a configuration's sources,
// after a reload): deliveries of the names it adds are counted from now
// on, and the figures of the names it drops stay until they age out.
func (r *Recorder) SetProviders(names []string) {
	known := make(map[string]bool, len(names))
	for _, p := range names {
		known[p] = true
	}
	r.known.Store(&known)
}

// Providers returns the configured providers' names, sorted.
func (r *Recorder) Providers() []string {
	known := *r.known.Load()
	names := make([]string, 0, len(known))
	for p := range known {
		names = append(names, p)
	}
	slices.Sort(names)
	return names
}

// latencyStart is the index of the first latency counter of a row.
func (r *Recorder) latencyStart() int { return len(r.outcomes) + len(r.reasons) }

// Observe counts one answered delivery, and its refusal's reason. It is
// (part of) the receiver's Config.OnDelivery. The core latency is the
// forward's duration, retries included, counted for the deliveries that
// reached the core (it took them, or rejected them for good): the same
// deliveries as CoreShare.Reached, so that the overview never shows more
// answers than deliveries that reached the core (a 5xx after the retries
// counts as not reached).
func (r *Recorder) Observe(d receiver.Delivery) {
	// Grouped by source (a source made from the environment is named
	// after its provider); a caller from before sources names none.
	provider := d.Source
	if provider == "" {
		provider = d.Provider
	}
	if !(*r.known.Load())[provider] {
		provider = UnknownProvider
	}
	oi, ok := r.index[d.Outcome]
	if !ok {
		oi = r.index[receiver.OutcomeError]
	}
	li := -1
	if d.Dispatch != nil && (d.Outcome == receiver.OutcomeForwarded || d.Outcome == receiver.OutcomeCoreRejected) {
		li = r.latencyStart() + bucketOf(d.Dispatch.Duration.Seconds())
	}
	ri, refused := r.rindex[d.Reason]
	minute := r.now().Unix() / 60
	rg := r.ring(provider)
	rg.mu.Lock()
	row := rg.row(minute, r.width)
	row[oi]++
	if li >= 0 {
		row[li]++
	}
	if refused {
		row[ri]++
	}
	rg.mu.Unlock()
	if d.Destination == "" || provider == UnknownProvider {
		return
	}
	var di int
	switch d.Outcome {
	case receiver.OutcomeForwarded, receiver.OutcomeCoreRejected:
		di = destReached
	case receiver.OutcomeUnavailable:
		di = destUnavailable
	case receiver.OutcomeQueued:
		di = destQueued
	default:
		return // a replay, a refusal: nothing had to reach the destination
	}
	drg := r.destRing(provider, d.Destination)
	drg.mu.Lock()
	drg.row(minute, destWidth)[di]++
	drg.mu.Unlock()
}

// destRing returns the ring of source's destination, made on its first
// delivery there.
func (r *Recorder) destRing(source, destination string) *ring {
	r.mu.RLock()
	rg := r.dests[source][destination]
	r.mu.RUnlock()
	if rg != nil {
		return rg
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.dests[source]
	if m == nil {
		m = map[string]*ring{}
		r.dests[source] = m
	}
	if rg = m[destination]; rg == nil {
		rg = newRing(destWidth)
		m[destination] = rg
	}
	return rg
}

func newRing(width int) *ring {
	rg := &ring{minutes: make([]int64, ringMinutes), cells: make([]uint32, ringMinutes*width)}
	for i := range rg.minutes {
		rg.minutes[i] = -1
	}
	return rg
}

// bucketOf is the index of the first bucket whose bound holds s, or
// len(LatencyBuckets) (+Inf).
func bucketOf(s float64) int {
	for i, b := range LatencyBuckets {
		if s <= b {
			return i
		}
	}
	return len(LatencyBuckets)
}

// ring returns provider's ring, made on its first delivery: a provider that
// gets none costs nothing.
func (r *Recorder) ring(provider string) *ring {
	r.mu.RLock()
	rg := r.rings[provider]
	r.mu.RUnlock()
	if rg != nil {
		return rg
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rg = r.rings[provider]; rg == nil {
		rg = newRing(r.width)
		r.rings[provider] = rg
	}
	return rg
}

// row returns minute's counters, cleared first if the slot held an older
// minute. The caller holds rg.mu.
func (rg *ring) row(minute int64, width int) []uint32 {
	slot := int(minute % ringMinutes)
	row := rg.cells[slot*width : (slot+1)*width]
	if rg.minutes[slot] != minute {
		clear(row)
		rg.minutes[slot] = minute
	}
	return row
}

// add adds minute's counters to dst (width long), if the ring still holds
// that minute. The caller holds rg.mu.
func (rg *ring) add(dst []uint64, minute int64, width int) {
	slot := int(minute % ringMinutes)
	if minute < 0 || rg.minutes[slot] != minute {
		return
	}
	for i, v := range rg.cells[slot*width : (slot+1)*width] {
		dst[i] += uint64(v)
	}
}
