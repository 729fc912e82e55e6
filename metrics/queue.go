package metrics

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/deliver"
)

// QueueReader is what the queue metrics read of the store at scrape time:
// each queue's depth and oldest waiting event, and the pause flags.
type QueueReader interface {
	QueueStats(ctx context.Context, destination string) (dedupe.QueueStats, error)
	Paused(ctx context.Context) (map[string]dedupe.Pause, error)
}

// Destination is one destination as the queue metrics show it.
type Destination struct {
	Name string
	// Queue is set for a queue destination: it has a depth, an oldest
	// waiting event and a max_age.
	Queue  bool
	MaxAge time.Duration
}

var (
	queueDepthDesc = prometheus.NewDesc("webhookd_queue_depth",
		"Events waiting in a queue destination's queue (QUEUED, not in an attempt), read from the store at scrape time.",
		[]string{"destination"}, nil)
	queueOldestDesc = prometheus.NewDesc("webhookd_queue_oldest_seconds",
		"Age of the oldest event waiting in a queue destination's queue (since its arrival or last redrive); 0 when none waits.",
		[]string{"destination"}, nil)
	queueMaxAgeDesc = prometheus.NewDesc("webhookd_queue_max_age_seconds",
		"A queue destination's max_age: no attempt starts later than this after an event's arrival.",
		[]string{"destination"}, nil)
	pausedDesc = prometheus.NewDesc("webhookd_destination_paused",
		"1 while a destination is paused (the flag is in the store, shared by every node), else 0.",
		[]string{"destination"}, nil)
)

// WatchQueues registers webhookd_queue_depth, webhookd_queue_oldest_seconds
// and webhookd_queue_max_age_seconds for each queue destination of dests,
// and webhookd_destination_paused for each destination, read from q when
// Prometheus scrapes: the store holds them, written by every node and by
// webhookd destinations, so no node keeps a copy that could drift. Each
// read costs a few index entries (dedupe.Queue.QueueStats), not the queue.
// Call it once, after the store is open; SetDestinations follows reloads.
func (m *Metrics) WatchQueues(q QueueReader, dests []Destination) error {
	c := &queueCollector{store: q, now: m.opts.Now}
	c.dests.Store(&dests)
	if c.now == nil {
		c.now = time.Now
	}
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	m.queues.Store(c)
	return nil
}

// SetDestinations puts a reloaded configuration's destinations in force:
// the next scrape reads the queues of dests (a destination the reload
// added is metered from then on, one it removed no longer is), and
// webhookd_delivery_attempts_total counts the attempts of each of them,
// its new series starting at zero. Counts already made stay, as counters
// do. Before WatchQueues and WatchAttempts it does nothing.
func (m *Metrics) SetDestinations(dests []Destination) {
	if c := m.queues.Load(); c != nil {
		c.dests.Store(&dests)
	}
	if a := m.attempts.Load(); a != nil {
		names := make([]string, len(dests))
		for i, d := range dests {
			names[i] = d.Name
		}
		a.add(names)
	}
}

type queueCollector struct {
	store QueueReader
	// dests is swapped whole by SetDestinations while scrapes read it.
	dests atomic.Pointer[[]Destination]
	now   func() time.Time
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueDepthDesc, queueOldestDesc, queueMaxAgeDesc, pausedDesc} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	paused, err := c.store.Paused(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pausedDesc, fmt.Errorf("reading the pause flags: %w", err))
	}
	now := c.now()
	for _, d := range *c.dests.Load() {
		if err == nil {
			ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, boolValue(paused[d.Name].Paused), d.Name)
		}
		if !d.Queue {
			continue
		}
		ch <- prometheus.MustNewConstMetric(queueMaxAgeDesc, prometheus.GaugeValue, d.MaxAge.Seconds(), d.Name)
		st, qerr := c.store.QueueStats(ctx, d.Name)
		if qerr != nil {
			ch <- prometheus.NewInvalidMetric(queueDepthDesc, fmt.Errorf("reading the queue of %s: %w", d.Name, qerr))
			continue
		}
		oldest := 0.0
		if !st.Oldest.IsZero() {
			oldest = max(now.Sub(st.Oldest).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(st.Depth), d.Name)
		ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, oldest, d.Name)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WatchAttempts registers webhookd_delivery_attempts_total{destination,outcome}
// with every (destination, outcome) pair at zero, and returns the function
// that counts one settled attempt (deliver.Options.OnAttempt). A label
// value outside destinations (and those SetDestinations adds) and
// deliver.Outcomes is not counted, so that no label ever comes from data.
func (m *Metrics) WatchAttempts(destinations []string) (func(destination, outcome string), error) {
	a := &attemptCounter{
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhookd_delivery_attempts_total",
			Help: "Attempts of queued events by webhookd's delivery loop, by destination and outcome (" + strings.Join(deliver.Outcomes, ", ") + ").",
		}, []string{"destination", "outcome"}),
		known:    map[string]bool{},
		outcomes: map[string]bool{},
	}
	if err := m.reg.Register(a.vec); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	for _, o := range deliver.Outcomes {
		a.outcomes[o] = true
	}
	a.add(destinations)
	m.attempts.Store(a)
	return a.observe, nil
}

// attemptCounter is webhookd_delivery_attempts_total with its label bound:
// the destinations of every configuration put in force.
type attemptCounter struct {
	vec      *prometheus.CounterVec
	outcomes map[string]bool // read only

	mu    sync.RWMutex
	known map[string]bool
}

// add makes names labels, each (name, outcome) series at zero.
func (a *attemptCounter) add(names []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range names {
		if a.known[d] {
			continue
		}
		a.known[d] = true
		for _, o := range deliver.Outcomes {
			a.vec.WithLabelValues(d, o)
		}
	}
}

func (a *attemptCounter) observe(destination, outcome string) {
	a.mu.RLock()
	known := a.known[destination]
	a.mu.RUnlock()
	if known && a.outcomes[outcome] {
		a.vec.WithLabelValues(destination, outcome).Inc()
	}
}
