package overview

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/webhookd/webhookd/receiver"
)

// ErrUnknownWindow is returned by ParseWindow for anything but 15m, 1h and
// 24h.
var ErrUnknownWindow = errors.New("overview: window must be 15m, 1h or 24h")

// Window is a span of time the overview summarises, cut into Steps of
// equal length for its chart.
type Window struct {
	Name  string        // as in ?window=: 15m, 1h, 24h
	Label string        // as a person reads it: "15 minutes"
	Span  time.Duration // how far back it reaches
	Step  time.Duration // one bar of the chart
}

// Windows are the windows the overview offers, shortest first; the second
// (1h) is the default.
var Windows = []Window{
	{Name: "15m", Label: "15 minutes", Span: 15 * time.Minute, Step: time.Minute},
	{Name: "1h", Label: "hour", Span: time.Hour, Step: 2 * time.Minute},
	{Name: "24h", Label: "24 hours", Span: 24 * time.Hour, Step: 30 * time.Minute},
}

// DefaultWindow is the window when none is asked for.
var DefaultWindow = Windows[1]

// ParseWindow returns the window named s; DefaultWindow when s is empty.
func ParseWindow(s string) (Window, error) {
	if s == "" {
		return DefaultWindow, nil
	}
	for _, w := range Windows {
		if w.Name == s {
			return w, nil
		}
	}
	return Window{}, fmt.Errorf("%w, not %q", ErrUnknownWindow, s)
}

// Summary is the overview of one window: GET /api/summary's answer.
type Summary struct {
	Window    string            `json:"window"`
	From      time.Time         `json:"from"`
	To        time.Time         `json:"to"`
	Step      string            `json:"step"`
	Providers []ProviderSummary `json:"providers"`
}

// ProviderSummary is one source's figures over the window. Without
// WEBHOOKD_CONFIG a source is a provider: Source and Provider are the same
// name.
type ProviderSummary struct {
	Provider string `json:"provider"`
	Source   string `json:"source"`
	// Now is the source's state over the last NowSpan, whatever the
	// window.
	Now Now `json:"now"`
	// Refusals counts webhookd's own refusals of the window by reason
	// (docs/operating.md, "Refusals and their reasons"), only the reasons
	// that occurred; Refused is their sum. The core's rejections are not
	// among them: they are Outcomes["core_rejected"], CoreRejected.
	Refusals     map[string]uint64 `json:"refusals"`
	Refused      uint64            `json:"refused"`
	CoreRejected uint64            `json:"core_rejected"`
	// Outcomes counts the window's deliveries by the outcome label of
	// webhookd_deliveries_total, every outcome present (zero or not).
	Outcomes map[string]uint64 `json:"outcomes"`
	// Total is the deliveries of the window, the lines of requests split
	// into items (outcome batch) left out: their items are counted.
	Total uint64 `json:"total"`
	// Core is how many deliveries reached the core service.
	Core CoreShare `json:"core"`
	// CoreLatency is the forward's duration, retries included, of the
	// deliveries the core service answered.
	CoreLatency Latency `json:"core_latency_seconds"`
	// Failed is the FAILED records of this provider waiting in the store.
	Failed *Failed `json:"failed,omitempty"`
	// Destinations are the source's destinations, by name: those its
	// routes reach (AddQueues) and those it delivered to in the window.
	Destinations []DestinationSummary `json:"destinations"`
	// Series is the window step by step, oldest first: Outcomes per Step,
	// zero counts left out.
	Series []Point `json:"series"`
}

// DestinationSummary is one destination of a source over the window.
type DestinationSummary struct {
	Destination string `json:"destination"`
	// Delivered is the share of the source's deliveries to it that reached
	// it (it answered: forwarded or core_rejected) among those that had
	// to (those and unavailable), as CoreShare for the source.
	Delivered CoreShare `json:"delivered"`
	// Queued counts the window's events stored QUEUED for it (a queue
	// destination): acknowledged to the gateway, delivered by the
	// delivery loop, whose attempts are on the destinations page.
	Queued uint64 `json:"queued"`
	// Queue is a queue destination's queue now, read from the store
	// (AddQueues); absent for a sync destination.
	Queue *QueueFigures `json:"queue,omitempty"`
}

// QueueFigures is a queue destination's queue as the store holds it: the
// same for every source that routes to it.
type QueueFigures struct {
	Depth int `json:"depth"`
	// Oldest is the arrival (or last redrive) of the oldest waiting event;
	// absent when none waits.
	Oldest *time.Time `json:"oldest,omitempty"`
}

// NowSpan is how far back the state now looks (docs/contract.md, the
// overview board).
const NowSpan = 5 * time.Minute

// The states of Now.State.
const (
	// StateFailing: a delivery did not reach its destination (unavailable,
	// or rejected by the core).
	StateFailing = "failing"
	// StateRefusing: none failed, but webhookd refused one.
	StateRefusing = "refusing"
	// StateDelivering: none failed or was refused, one was delivered
	// (forwarded, or replayed).
	StateDelivering = "delivering"
	// StateIdle: nothing of the above.
	StateIdle = "idle"
)

// Now is a source's last NowSpan: its state and the counts it comes from.
type Now struct {
	State     string `json:"state"`
	Failing   uint64 `json:"failing"`
	Refused   uint64 `json:"refused"`
	Delivered uint64 `json:"delivered"`
}

// CoreShare is the share of deliveries that reached the core service among
// those that had to: forwarded and core_rejected reached it (the core
// answered), unavailable did not (the core, the store or a status API
// failed). Duplicates and webhookd's own refusals never had to.
type CoreShare struct {
	Reached   uint64   `json:"reached"`
	Attempted uint64   `json:"attempted"`
	Share     *float64 `json:"share"` // Reached/Attempted; null when Attempted is 0
}

// Latency is an estimate from histogram buckets, as Prometheus's
// histogram_quantile makes it: linear within the bucket, and the largest
// finite bound for the +Inf bucket. Null when Count is 0.
type Latency struct {
	Count uint64   `json:"count"`
	P50   *float64 `json:"p50"`
	P99   *float64 `json:"p99"`
}

// Point is one step of the window.
type Point struct {
	Start    time.Time         `json:"start"`
	Outcomes map[string]uint64 `json:"outcomes"`
}

// Failed is what the store holds of one provider's FAILED records.
type Failed struct {
	Waiting uint64 `json:"waiting"`
	// AtLeast is true when the store holds more than were counted (the
	// count stopped at MaxFailedCounted).
	AtLeast bool `json:"at_least,omitempty"`
	// Oldest is the creation time of the oldest one counted, and OldestKey
	// its key; absent when Waiting is 0.
	Oldest    *time.Time `json:"oldest,omitempty"`
	OldestKey string     `json:"oldest_key,omitempty"`
}

// Summary sums the ring over w, ending at the current minute. Configured
// providers are listed whether or not they had deliveries; UnknownProvider
// only when it had some.
func (r *Recorder) Summary(w Window) Summary {
	now := r.now()
	endMinute := now.Unix() / 60 // the current minute, included
	stepMinutes := int64(w.Step / time.Minute)
	steps := int64(w.Span / w.Step)
	// The first step starts so that the last one holds the current minute.
	firstMinute := (endMinute/stepMinutes+1)*stepMinutes - steps*stepMinutes
	sum := Summary{
		Window: w.Name, Step: w.Step.String(),
		From: time.Unix(firstMinute*60, 0).UTC(), To: now.UTC(),
	}
	names := r.Providers()
	r.mu.RLock()
	if r.rings[UnknownProvider] != nil && !(*r.known.Load())[UnknownProvider] {
		names = append(names, UnknownProvider)
	}
	rings := make([]*ring, len(names))
	dests := make([]map[string]*ring, len(names))
	for i, p := range names {
		rings[i] = r.rings[p]
		dests[i] = maps.Clone(r.dests[p])
	}
	r.mu.RUnlock()

	for i, p := range names {
		ps := ProviderSummary{Provider: p, Source: p, Outcomes: map[string]uint64{}, Refusals: map[string]uint64{}, Series: []Point{}}
		total := make([]uint64, r.width)
		step := make([]uint64, r.width)
		for s := range steps {
			clear(step)
			start := firstMinute + s*stepMinutes
			if rg := rings[i]; rg != nil {
				rg.mu.Lock()
				for m := start; m < start+stepMinutes; m++ {
					rg.add(step, m, r.width)
				}
				rg.mu.Unlock()
			}
			pt := Point{Start: time.Unix(start*60, 0).UTC(), Outcomes: map[string]uint64{}}
			for oi, o := range r.outcomes {
				if step[oi] > 0 {
					pt.Outcomes[o.String()] = step[oi]
				}
			}
			ps.Series = append(ps.Series, pt)
			for j, v := range step {
				total[j] += v
			}
		}
		r.fill(&ps, total)
		ps.Now = r.nowState(rings[i], endMinute)
		ps.Destinations = destinationSums(dests[i], firstMinute, endMinute)
		sum.Providers = append(sum.Providers, ps)
	}
	return sum
}

// fill sets ps's totals from the window's summed counters.
func (r *Recorder) fill(ps *ProviderSummary, total []uint64) {
	for oi, o := range r.outcomes {
		ps.Outcomes[o.String()] = total[oi]
		if o != receiver.OutcomeBatch {
			ps.Total += total[oi]
		}
	}
	out := func(o receiver.Outcome) uint64 { return total[r.index[o]] }
	ps.Core.Reached = out(receiver.OutcomeForwarded) + out(receiver.OutcomeCoreRejected)
	ps.Core.Attempted = ps.Core.Reached + out(receiver.OutcomeUnavailable)
	if ps.Core.Attempted > 0 {
		share := float64(ps.Core.Reached) / float64(ps.Core.Attempted)
		ps.Core.Share = &share
	}
	for i, reason := range r.reasons {
		if n := total[len(r.outcomes)+i]; n > 0 {
			ps.Refusals[reason] = n
			ps.Refused += n
		}
	}
	ps.CoreRejected = out(receiver.OutcomeCoreRejected)
	buckets := total[r.latencyStart():]
	for _, n := range buckets {
		ps.CoreLatency.Count += n
	}
	if ps.CoreLatency.Count > 0 {
		p50, p99 := quantile(0.5, buckets), quantile(0.99, buckets)
		ps.CoreLatency.P50, ps.CoreLatency.P99 = &p50, &p99
	}
}

// destinationSums sums each destination's ring over [first, end]
// minutes, sorted by name.
func destinationSums(rings map[string]*ring, first, end int64) []DestinationSummary {
	out := make([]DestinationSummary, 0, len(rings))
	for _, name := range slices.Sorted(maps.Keys(rings)) {
		sum := make([]uint64, destWidth)
		rg := rings[name]
		rg.mu.Lock()
		for m := first; m <= end; m++ {
			rg.add(sum, m, destWidth)
		}
		rg.mu.Unlock()
		ds := DestinationSummary{Destination: name, Queued: sum[destQueued]}
		ds.Delivered = share(sum[destReached], sum[destReached]+sum[destUnavailable])
		out = append(out, ds)
	}
	return out
}

// share is reached of attempted, Share nil when attempted is 0.
func share(reached, attempted uint64) CoreShare {
	s := CoreShare{Reached: reached, Attempted: attempted}
	if attempted > 0 {
		f := float64(reached) / float64(attempted)
		s.Share = &f
	}
	return s
}

// nowState sums rg's last NowSpan, ending with endMinute, into a state.
func (r *Recorder) nowState(rg *ring, endMinute int64) Now {
	sum := make([]uint64, r.width)
	if rg != nil {
		rg.mu.Lock()
		for m := endMinute - int64(NowSpan/time.Minute) + 1; m <= endMinute; m++ {
			rg.add(sum, m, r.width)
		}
		rg.mu.Unlock()
	}
	out := func(o receiver.Outcome) uint64 { return sum[r.index[o]] }
	n := Now{
		Failing:   out(receiver.OutcomeUnavailable) + out(receiver.OutcomeCoreRejected),
		Delivered: out(receiver.OutcomeForwarded) + out(receiver.OutcomeReplayed),
	}
	for i := range r.reasons {
		n.Refused += sum[len(r.outcomes)+i]
	}
	switch {
	case n.Failing > 0:
		n.State = StateFailing
	case n.Refused > 0:
		n.State = StateRefusing
	case n.Delivered > 0:
		n.State = StateDelivering
	default:
		n.State = StateIdle
	}
	return n
}

// quantile estimates the q-quantile of the observations counted in buckets
// (LatencyBuckets, then +Inf), as histogram_quantile does.
func quantile(q float64, buckets []uint64) float64 {
	var count uint64
	for _, n := range buckets {
		count += n
	}
	rank := q * float64(count)
	var cum uint64
	for i, n := range buckets {
		if float64(cum+n) < rank || n == 0 {
			cum += n
			continue
		}
		if i == len(LatencyBuckets) {
			return LatencyBuckets[len(LatencyBuckets)-1]
		}
		lower := 0.0
		if i > 0 {
			lower = LatencyBuckets[i-1]
		}
		return lower + (LatencyBuckets[i]-lower)*(rank-float64(cum))/float64(n)
	}
	return LatencyBuckets[len(LatencyBuckets)-1]
}
