package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/receiver"
)

// UnknownProvider is the provider label of deliveries to a provider that is
// not configured.
const UnknownProvider = "unknown"

// scrapeTimeout bounds one scrape, the store count included.
const scrapeTimeout = 10 * time.Second

// DefaultRecordsMaxAge is how long a count of the store's records serves
// later scrapes when Options.RecordsMaxAge is zero. Counting walks every
// record (6 to 8 million a second: BenchmarkStats in package dedupe), so a
// week of retention at a few events a second costs a second or more; a
// state count half a minute old is still accurate enough to alert on.
const DefaultRecordsMaxAge = 30 * time.Second

// Options configure New.
type Options struct {
	// Providers are the configured provider names; they are the only
	// provider label values besides UnknownProvider.
	Providers []string
	// Sources are the configured sources' providers by source name: the
	// only source label values besides UnknownProvider. Nil makes every
	// provider a source of its own (the environment's configuration).
	// SetSources changes them on a reload.
	Sources map[string]string
	// Logger receives errors met while gathering or writing metrics; nil
	// discards them.
	Logger *slog.Logger
	// RecordsMaxAge is how long a count of records by state is reused by
	// later scrapes: DefaultRecordsMaxAge if zero, a fresh count on every
	// scrape if negative.
	RecordsMaxAge time.Duration
	// Now is the clock of RecordsMaxAge; time.Now if nil.
	Now func() time.Time
}

// Metrics holds webhookd's collectors. Its methods are safe for concurrent
// use.
type Metrics struct {
	reg       *prometheus.Registry
	opts      Options
	providers map[string]bool
	// sources is the source label's bound: names from the configuration,
	// never from a request.
	sources  atomic.Pointer[map[string]string]
	outcomes map[receiver.Outcome]bool
	handler  http.Handler
	log      *slog.Logger

	deliveries       *prometheus.CounterVec
	deliveryDuration *prometheus.HistogramVec
	dispatchDuration *prometheus.HistogramVec
	dispatchAttempts *prometheus.CounterVec
	dependencyFails  *prometheus.CounterVec
	refusals         *prometheus.CounterVec
	requestLogDrops  prometheus.Counter
	commitDuration   prometheus.Histogram
	commitBatch      prometheus.Histogram
	pruned           prometheus.Counter
	// The children of the vectors every delivery counts in (see
	// seriesCache).
	deliveryCache         seriesCache[deliveryLabels, prometheus.Counter]
	deliveryDurationCache seriesCache[string, prometheus.Observer]
	dispatchDurationCache seriesCache[dispatchLabels, prometheus.Observer]
	dispatchAttemptsCache seriesCache[string, prometheus.Counter]
	// queues and attempts are set by WatchQueues and WatchAttempts, and
	// follow reloads (SetDestinations).
	queues   atomic.Pointer[queueCollector]
	attempts atomic.Pointer[attemptCounter]
}

// CheckProviderName refuses a name that cannot label a provider's series:
// empty, or UnknownProvider, under which requests to providers that are not
// configured are counted. `webhookd providers check` and serve's loading
// of provider specs run it too, so that a spec of that name is refused
// naming its file rather than when the metrics start.
func CheckProviderName(name string) error {
	if name == "" || name == UnknownProvider {
		return fmt.Errorf("%q cannot be a provider name: the metrics count requests to providers that are not configured as %q", name, UnknownProvider)
	}
	return nil
}

// New registers webhookd's metrics, and the Go runtime and process
// collectors, on reg. reg must be a registry of the caller's own: New fails
// if any of these names is already registered on it.
func New(reg *prometheus.Registry, opts Options) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: a registry is required")
	}
	if opts.RecordsMaxAge == 0 {
		opts.RecordsMaxAge = DefaultRecordsMaxAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Metrics{
		reg:       reg,
		opts:      opts,
		providers: map[string]bool{},
		outcomes:  map[receiver.Outcome]bool{},
		log:       opts.Logger,
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	for _, p := range opts.Providers {
		if err := CheckProviderName(p); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		m.providers[p] = true
	}
	for _, o := range receiver.Outcomes() {
		m.outcomes[o] = true
	}

	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhookd_deliveries_total",
		Help: "Provider requests answered, by source, provider and outcome (" + outcomeList() + "); an event sent to several destinations counts once per destination and once more as batch.",
	}, []string{"source", "provider", "outcome"})
	m.deliveryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "webhookd_delivery_duration_seconds",
		Help:    "Time from a provider request's arrival to its answer, forwarding included.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"provider"})
	m.dispatchDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "webhookd_dispatch_duration_seconds",
		Help:    "Time spent forwarding one delivery to the core service, retries included, by result (delivered, rejected, unavailable).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"provider", "result"})
	m.dispatchAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhookd_dispatch_attempts_total",
		Help: "Requests sent to the core service, retries included.",
	}, []string{"provider"})
	m.dependencyFails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhookd_dependency_failures_total",
		Help: "Deliveries answered 503 because a dependency could not be reached, by provider and dependency (core, store, provider_api: a certificate or status API).",
	}, []string{"provider", "dependency"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhookd_refusals_total",
		Help: "Provider requests webhookd refused itself, by source and reason (" + strings.Join(receiver.Reasons(), ", ") +
			"); the core's own rejections are the outcome core_rejected of webhookd_deliveries_total, not refusals.",
	}, []string{"source", "reason"})
	m.requestLogDrops = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "webhookd_request_log_dropped_total",
		Help: "Request log entries lost: dropped while the log's buffer was full (a flood), or in a write that failed.",
	})
	m.commitDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "webhookd_store_commit_duration_seconds",
		Help: "Time one dedupe store write transaction took, the sync to disk included.",
		// From a page-cache commit to an fsync on a busy disk.
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	m.commitBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "webhookd_store_commit_batch_size",
		Help:    "Writes coalesced into one dedupe store commit (group commit).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10), // 1 to 512; lmdb.DefaultMaxBatch is 256
	})
	m.pruned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "webhookd_store_pruned_records_total",
		Help: "Expired records deleted from the dedupe store.",
	})

	for _, c := range []prometheus.Collector{
		m.deliveries, m.deliveryDuration, m.dispatchDuration, m.dispatchAttempts, m.dependencyFails,
		m.refusals, m.requestLogDrops, m.commitDuration, m.commitBatch, m.pruned,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	m.zero()
	sources := opts.Sources
	if sources == nil {
		sources = map[string]string{}
		for _, p := range opts.Providers {
			sources[p] = p
		}
	}
	if err := m.SetSources(sources); err != nil {
		return nil, err
	}

	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: errorLog{m.log},
		// A failing collector (the store count) must not hide the rest.
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            reg,
		MaxRequestsInFlight: 4,
		Timeout:             scrapeTimeout,
	})
	m.handler = promhttp.InstrumentMetricHandler(reg, h)
	return m, nil
}

// zero creates every series that can exist, at zero, so that rates and
// alerts work from the first scrape instead of from the first occurrence.
func (m *Metrics) zero() {
	names := append(m.providerNames(), UnknownProvider)
	for _, p := range names {
		m.deliveryDuration.WithLabelValues(p)
	}
	for _, p := range m.providerNames() {
		for _, r := range []dispatch.Outcome{dispatch.Delivered, dispatch.Rejected, dispatch.Unavailable} {
			m.dispatchDuration.WithLabelValues(p, r.String())
		}
		m.dispatchAttempts.WithLabelValues(p)
	}
	for _, p := range names {
		for _, dep := range dependencies {
			m.dependencyFails.WithLabelValues(p, dep)
		}
		for _, r := range receiver.Reasons() {
			m.refusals.WithLabelValues(p, r)
		}
	}
}

// SetSources bounds the source label to names (a configuration's
// sources, after a reload too) and creates their series at zero. A
// source's provider label is its provider's, bounded as ever.
//
// sources maps each source to its provider; their series are created at
// zero, so that rates work from the first scrape.
func (m *Metrics) SetSources(sources map[string]string) error {
	set := make(map[string]string, len(sources))
	for n, p := range sources {
		if n == "" || n == UnknownProvider {
			return fmt.Errorf("metrics: %q cannot be a source name", n)
		}
		set[n] = p
	}
	for o := range m.outcomes {
		m.deliveries.WithLabelValues(UnknownProvider, UnknownProvider, o.String())
		for n, p := range set {
			m.deliveries.WithLabelValues(n, m.provider(p), o.String())
		}
	}
	m.sources.Store(&set)
	return nil
}

// dependencies are the dependency label's values.
var dependencies = []string{receiver.DependencyCore, receiver.DependencyStore, receiver.DependencyProviderAPI}

// outcomeList is the outcome label's values, for the help text.
func outcomeList() string {
	names := make([]string, 0, len(receiver.Outcomes()))
	for _, o := range receiver.Outcomes() {
		names = append(names, o.String())
	}
	return strings.Join(names, ", ")
}

// providerNames returns the configured providers' names, sorted, so that
// series are created in the same order on every start.
func (m *Metrics) providerNames() []string {
	return slices.Sorted(maps.Keys(m.providers))
}

// provider bounds the provider label.
func (m *Metrics) provider(name string) string {
	if m.providers[name] {
		return name
	}
	return UnknownProvider
}

// ObserveDelivery counts one answered provider request. It is the
// receiver's Config.OnDelivery.
func (m *Metrics) ObserveDelivery(d receiver.Delivery) {
	p := m.provider(d.Provider)
	outcome := d.Outcome
	if !m.outcomes[outcome] {
		outcome = receiver.OutcomeError
	}
	src := d.Source
	if src == "" {
		src = d.Provider // a caller from before sources
	}
	if _, ok := (*m.sources.Load())[src]; !ok || p == UnknownProvider {
		src = UnknownProvider
	}
	m.delivered(deliveryLabels{src, p, outcome}).Inc()
	m.deliveryDurationOf(p).Observe(d.Duration.Seconds())
	if slices.Contains(dependencies, d.Failed) {
		m.dependencyFails.WithLabelValues(p, d.Failed).Inc()
	}
	if d.Reason != "" && slices.Contains(receiver.Reasons(), d.Reason) {
		// The source is the provider's route name until sources are
		// configured by name; the label is bounded the same way.
		m.refusals.WithLabelValues(p, d.Reason).Inc()
	}
	if d.Dispatch != nil {
		m.dispatchDurationOf(dispatchLabels{p, d.Dispatch.Outcome}).Observe(d.Dispatch.Duration.Seconds())
		m.dispatchAttemptsOf(p).Add(float64(d.Dispatch.Attempts))
	}
}

// deliveryLabels are the labels of webhookd_deliveries_total.
type deliveryLabels struct {
	source, provider string
	outcome          receiver.Outcome
}

// dispatchLabels are the labels of the dispatch duration.
type dispatchLabels struct {
	provider string
	outcome  dispatch.Outcome
}

// delivered, deliveryDurationOf, dispatchDurationOf and dispatchAttemptsOf
// return the child of their vector for the labels, from its seriesCache.
func (m *Metrics) delivered(l deliveryLabels) prometheus.Counter {
	return m.deliveryCache.get(l, func() prometheus.Counter {
		return m.deliveries.WithLabelValues(l.source, l.provider, l.outcome.String())
	})
}

func (m *Metrics) deliveryDurationOf(provider string) prometheus.Observer {
	return m.deliveryDurationCache.get(provider, func() prometheus.Observer {
		return m.deliveryDuration.WithLabelValues(provider)
	})
}

func (m *Metrics) dispatchDurationOf(l dispatchLabels) prometheus.Observer {
	return m.dispatchDurationCache.get(l, func() prometheus.Observer {
		return m.dispatchDuration.WithLabelValues(l.provider, l.outcome.String())
	})
}

func (m *Metrics) dispatchAttemptsOf(provider string) prometheus.Counter {
	return m.dispatchAttemptsCache.get(provider, func() prometheus.Counter {
		return m.dispatchAttempts.WithLabelValues(provider)
	})
}

// ObserveRequestLogDrop counts n request log entries lost. It is
// requestlog.Options.OnDrop.
func (m *Metrics) ObserveRequestLogDrop(n int) { m.requestLogDrops.Add(float64(n)) }

// ObserveCommit records one store commit. It is dedupe.Options.OnCommit.
func (m *Metrics) ObserveCommit(batch int, d time.Duration) {
	m.commitBatch.Observe(float64(batch))
	m.commitDuration.Observe(d.Seconds())
}

// ObservePrune counts records the pruner deleted. It is
// dedupe.Options.OnPrune.
func (m *Metrics) ObservePrune(n int) {
	m.pruned.Add(float64(n))
}

// StoreStats is what WatchStore needs of the dedupe store.
type StoreStats interface {
	Stats(ctx context.Context) (map[dedupe.State]int, error)
}

// WatchStore registers webhookd_store_records{state}, which counts the
// store's records by state (in_flight, completed, failed) when Prometheus
// scrapes, at most once per Options.RecordsMaxAge. Call it once, after the
// store is open.
func (m *Metrics) WatchStore(s StoreStats) error {
	c := &recordsCollector{store: s, maxAge: m.opts.RecordsMaxAge, now: m.opts.Now}
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// Load is what WatchLoad reads of the receiver's open deliveries
// (receiver.Load).
type Load interface {
	Open() int
	Busy() bool
}

// WatchLoad registers webhookd_deliveries_open, the deliveries the node
// has open (body read, not yet answered), and webhookd_node_busy, 1 while
// their count keeps queue destinations to one attempt each
// (docs/delivery.md, "Acknowledgements first"). Both are read at scrape
// time. Call it once.
func (m *Metrics) WatchLoad(l Load) error {
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "webhookd_deliveries_open",
		Help: "Deliveries the node has open: body read, not yet answered."},
		func() float64 { return float64(l.Open()) })
	busy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "webhookd_node_busy",
		Help: "1 while the node's open deliveries keep each queue destination to one attempt (acknowledgements first)."},
		func() float64 {
			if l.Busy() {
				return 1
			}
			return 0
		})
	for _, c := range []prometheus.Collector{open, busy} {
		if err := m.reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// Handler serves the registry in the Prometheus text format (or whatever
// the scraper negotiates).
func (m *Metrics) Handler() http.Handler { return m.handler }

// recordsCollector reads the store at scrape time rather than keeping
// gauges, so that records written by other processes (webhookd keys) and
// records the pruner removed are counted without any bookkeeping on the
// write path.
//
// A count is reused for maxAge, and concurrent scrapes share one count.
type recordsCollector struct {
	store  StoreStats
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	counts  map[dedupe.State]int
	counted time.Time
}

var recordsDesc = prometheus.NewDesc("webhookd_store_records",
	"Records in the dedupe store, by state (in_flight, completed, failed, queued), counted at scrape time.",
	[]string{"state"}, nil)

var recordStates = []dedupe.State{dedupe.InFlight, dedupe.Completed, dedupe.Failed, dedupe.Queued}

func (c *recordsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- recordsDesc }

func (c *recordsCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := c.count()
	if err != nil {
		// The scrape reports the error (promhttp_metric_handler_errors_total
		// and the log) and serves every other metric.
		ch <- prometheus.NewInvalidMetric(recordsDesc, fmt.Errorf("counting store records: %w", err))
		return
	}
	// Only the known states: a corrupt state byte must not become a label.
	for _, st := range recordStates {
		ch <- prometheus.MustNewConstMetric(recordsDesc, prometheus.GaugeValue, float64(counts[st]), strings.ToLower(st.String()))
	}
}

// count returns the counts of the last maxAge, or counts afresh.
func (c *recordsCollector) count() (map[dedupe.State]int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts != nil && c.maxAge > 0 && c.now().Sub(c.counted) < c.maxAge {
		return c.counts, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts, err := c.store.Stats(ctx)
	if err != nil {
		return nil, err
	}
	c.counts, c.counted = counts, c.now()
	return counts, nil
}

// errorLog adapts slog to promhttp.Logger.
type errorLog struct{ l *slog.Logger }

func (e errorLog) Println(v ...any) {
	e.l.Warn("metrics", "error", strings.TrimSpace(fmt.Sprintln(v...)))
}
