package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/metrics"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

const secret = "whsec_metrics_test_secret"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// stack is the real receiver, store and forwarder, with metrics wired as
// serve wires them.
type stack struct {
	t     *testing.T
	srv   *httptest.Server
	store *lmdb.Store
	clock *clock
	// slow is closed to let the downstream answer evt_slow.
	slow    chan struct{}
	arrived chan struct{}
}

func newStack(t *testing.T) *stack {
	s := &stack{t: t, clock: &clock{t: time.Now()}, slow: make(chan struct{}), arrived: make(chan struct{}, 1)}
	// The core service answers by event: 422 for evt_reject, 500 for
	// evt_down, a held answer for evt_slow, 201 otherwise.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte(`"evt_reject"`)):
			w.WriteHeader(http.StatusUnprocessableEntity)
		case bytes.Contains(body, []byte(`"evt_down"`)):
			w.WriteHeader(http.StatusInternalServerError)
		case bytes.Contains(body, []byte(`"evt_slow"`)):
			s.arrived <- struct{}{}
			<-s.slow
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	t.Cleanup(down.Close)

	reg := prometheus.NewRegistry()
	// Counted on every scrape, so that the test sees the pruning at once.
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe"}, RecordsMaxAge: -1})
	require.NoError(t, err)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{
		Options:  dedupe.Options{Lease: time.Minute, Retention: time.Hour, Now: s.clock.Now, PruneInterval: -1, OnPrune: m.ObservePrune},
		NoSync:   true,
		OnCommit: m.ObserveCommit,
	})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	s.store = store
	require.NoError(t, m.WatchStore(store))

	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	var providerReg providers.Registry
	require.NoError(t, providerReg.Register(ad))
	fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: 5 * time.Second, Retries: 1,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
	require.NoError(t, err)
	h, err := receiver.New(receiver.Config{
		Providers: &providerReg, Store: store, Forwarder: fwd, Ready: store.Ping,
		Metrics: m.Handler(), MaxBodyBytes: 2048, OnDelivery: m.ObserveDelivery,
	})
	require.NoError(t, err)
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	return s
}

func event(id string, amount int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"charge.succeeded","data":{"object":{"amount":%d}}}`, id, amount)
}

func (s *stack) post(provider string, body []byte, sig string) int {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+"/webhooks/"+provider, bytes.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Stripe-Signature", sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func (s *stack) deliver(body []byte) int {
	return s.post("stripe", body, stripeSignature(s.t, secret, time.Now(), body))
}

// scrape fetches /metrics and parses the text format.
func (s *stack) scrape() map[string]*dto.MetricFamily {
	s.t.Helper()
	resp, err := http.Get(s.srv.URL + "/metrics")
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	require.Contains(s.t, resp.Header.Get("Content-Type"), "text/plain")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(s.t, err)
	return families
}

// value finds the sample of family with exactly labels; ok is false when
// there is none.
func value(families map[string]*dto.MetricFamily, family string, labels map[string]string) (v float64, ok bool) {
	mf := families[family]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, lp := range m.GetLabel() {
			if labels[lp.GetName()] != lp.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetricsAfterAScriptedMixOfDeliveries(t *testing.T) {
	s := newStack(t)
	before := s.scrape()
	// Every series exists at zero from the start.
	for _, o := range receiver.Outcomes() {
		for _, p := range []string{"stripe", "unknown"} {
			v, ok := value(before, "webhookd_deliveries_total", map[string]string{"source": p, "provider": p, "outcome": o.String()})
			require.True(t, ok, "%s/%s", p, o)
			require.Zero(t, v)
		}
	}

	// The script. Each line says what the receiver should answer.
	for i := range 3 {
		require.Equal(t, 201, s.deliver(event(fmt.Sprintf("evt_ok_%d", i), 1))) // forwarded ×3
	}
	require.Equal(t, 201, s.deliver(event("evt_ok_0", 1)))                  // replayed
	require.Equal(t, 201, s.deliver(event("evt_ok_1", 1)))                  // replayed
	require.Equal(t, 422, s.deliver(event("evt_ok_2", 999)))                // mismatch
	require.Equal(t, 422, s.deliver(event("evt_reject", 1)))                // core_rejected (and FAILED)
	require.Equal(t, 422, s.deliver(event("evt_reject", 1)))                // replayed
	require.Equal(t, 503, s.deliver(event("evt_down", 1)))                  // unavailable, 2 attempts
	require.Equal(t, 401, s.post("stripe", event("evt_x", 1), "t=1,v1=00")) // unauthorized (stale)
	require.Equal(t, 401, s.post("stripe", event("evt_x", 1), ""))          // unauthorized
	require.Equal(t, 400, s.deliver([]byte(`not json`)))                    // bad_request
	require.Equal(t, 413, s.deliver(bytes.Repeat([]byte("x"), 4096)))       // too_large
	for _, p := range []string{"paypal", "midtrans", strings.Repeat("z", 40)} {
		require.Equal(t, 404, s.post(p, event("evt_x", 1), "")) // not_found, provider "unknown"
	}
	// conflict: a second delivery while the first is still forwarding.
	done := make(chan int, 1)
	go func() { done <- s.deliver(event("evt_slow", 1)) }()
	<-s.arrived
	require.Equal(t, 409, s.deliver(event("evt_slow", 1)))
	close(s.slow)
	require.Equal(t, 200, <-done) // forwarded

	f := s.scrape()
	want := map[string]float64{
		"forwarded": 4, "replayed": 3, "mismatch": 1, "core_rejected": 1, "unavailable": 1,
		"unauthorized": 2, "bad_request": 1, "too_large": 1, "conflict": 1, "not_found": 0, "error": 0,
	}
	for outcome, n := range want {
		v, ok := value(f, "webhookd_deliveries_total", map[string]string{"source": "stripe", "provider": "stripe", "outcome": outcome})
		require.True(t, ok, outcome)
		require.Equal(t, n, v, outcome)
	}
	v, _ := value(f, "webhookd_deliveries_total", map[string]string{"source": "unknown", "provider": "unknown", "outcome": "not_found"})
	require.Equal(t, 3.0, v, "unconfigured names share one bounded label")

	// Refusals by reason: webhookd's own, never the core's 422.
	refusals := map[[2]string]float64{
		{"stripe", "payload_mismatch"}: 1, {"stripe", "signature_invalid"}: 0, {"stripe", "signature_missing"}: 1,
		{"stripe", "malformed"}: 1, {"stripe", "too_large"}: 1, {"unknown", "unknown_source"}: 3,
		{"stripe", "timestamp_outside_tolerance"}: 1, {"stripe", "no_event_key"}: 0,
	}
	for sr, n := range refusals {
		v, ok := value(f, "webhookd_refusals_total", map[string]string{"source": sr[0], "reason": sr[1]})
		require.True(t, ok, "%v exists from the start", sr)
		require.Equal(t, n, v, "%v", sr)
	}
	var total float64
	for _, m := range f["webhookd_refusals_total"].GetMetric() {
		total += m.GetCounter().GetValue()
	}
	require.Equal(t, 8.0, total, "the core's rejection and the 409 and 503 are no refusals")
	for _, mf := range f {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				require.NotContains(t, lp.GetValue(), "evt_", "no event key in any label: %s", mf.GetName())
				require.NotContains(t, lp.GetValue(), "paypal", mf.GetName())
			}
		}
	}

	// 18 requests: 15 to stripe, and the 3 not_found ones under "unknown".
	v, _ = value(f, "webhookd_delivery_duration_seconds", map[string]string{"provider": "stripe"})
	require.Equal(t, 15.0, v)

	// Forwards: 4 delivered, 1 rejected, 1 unavailable; attempts: one each,
	// and two for the unavailable one (Retries: 1).
	for result, n := range map[string]float64{"delivered": 4, "rejected": 1, "unavailable": 1} {
		v, _ := value(f, "webhookd_dispatch_duration_seconds", map[string]string{"provider": "stripe", "result": result})
		require.Equal(t, n, v, result)
	}
	v, _ = value(f, "webhookd_dispatch_attempts_total", map[string]string{"provider": "stripe"})
	require.Equal(t, 7.0, v)

	// Store: 4 COMPLETED, 1 FAILED; evt_down was released.
	for state, n := range map[string]float64{"completed": 4, "failed": 1, "in_flight": 0} {
		v, ok := value(f, "webhookd_store_records", map[string]string{"state": state})
		require.True(t, ok, state)
		require.Equal(t, n, v, state)
	}
	commits, ok := value(f, "webhookd_store_commit_duration_seconds", nil)
	require.True(t, ok)
	require.Positive(t, commits)
	batches, _ := value(f, "webhookd_store_commit_batch_size", nil)
	require.Equal(t, commits, batches, "one batch size per commit")
	writes := f["webhookd_store_commit_batch_size"].GetMetric()[0].GetHistogram().GetSampleSum()
	// Six new claims, four completes, one fail and one release are one
	// write each; duplicates are answered from a read transaction.
	require.Equal(t, 12.0, writes)

	// Pruning.
	v, _ = value(f, "webhookd_store_pruned_records_total", nil)
	require.Zero(t, v)
	s.clock.Advance(2 * time.Hour)
	n, err := s.store.Prune(context.Background(), 100)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	f = s.scrape()
	v, _ = value(f, "webhookd_store_pruned_records_total", nil)
	require.Equal(t, 5.0, v)
	v, _ = value(f, "webhookd_store_records", map[string]string{"state": "completed"})
	require.Zero(t, v)

	// The Go and process collectors are there.
	require.Contains(t, f, "go_goroutines")
	require.Contains(t, f, "process_resident_memory_bytes")
}

type failingStats struct{}

func (failingStats) Stats(context.Context) (map[dedupe.State]int, error) {
	return nil, errors.New("disk on fire")
}

func TestStoreStatsErrorLeavesTheRestOfTheScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe"}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, m.WatchStore(failingStats{}))
	m.ObserveDelivery(receiver.Delivery{Provider: "stripe", Outcome: "forwarded"})

	scrape := func() map[string]*dto.MetricFamily {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(rec.Body)
		require.NoError(t, err)
		return families
	}
	scrape()
	families := scrape()
	v, _ := value(families, "webhookd_deliveries_total", map[string]string{"source": "stripe", "provider": "stripe", "outcome": "forwarded"})
	require.Equal(t, 1.0, v)
	require.NotContains(t, families, "webhookd_store_records")
	// The counter counts the failure after each scrape is served.
	v, _ = value(families, "promhttp_metric_handler_errors_total", map[string]string{"cause": "gathering"})
	require.Equal(t, 1.0, v)
	require.Contains(t, logs.String(), "disk on fire")
	require.Equal(t, 1.0, v)
}

type fakeLoad struct {
	open int
	busy bool
}

func (f fakeLoad) Open() int  { return f.open }
func (f fakeLoad) Busy() bool { return f.busy }

func TestWatchLoadReadsTheLoadAtScrape(t *testing.T) {
	for _, l := range []fakeLoad{{open: 0, busy: false}, {open: 17, busy: true}} {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe"}})
		require.NoError(t, err)
		require.NoError(t, m.WatchLoad(l))
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(rec.Body)
		require.NoError(t, err)
		open, ok := value(families, "webhookd_deliveries_open", nil)
		require.True(t, ok)
		require.Equal(t, float64(l.open), open)
		busy, ok := value(families, "webhookd_node_busy", nil)
		require.True(t, ok)
		require.Equal(t, map[bool]float64{false: 0, true: 1}[l.busy], busy)
		require.Error(t, m.WatchLoad(l), "registered twice")
	}
}

func TestLabelsStayBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe", "xendit"}})
	require.NoError(t, err)
	for i := range 100 {
		m.ObserveDelivery(receiver.Delivery{Provider: fmt.Sprintf("probe%d", i), Outcome: "not_found"})
		m.ObserveDelivery(receiver.Delivery{Provider: "stripe", Outcome: receiver.Outcome(fmt.Sprintf("made-up-%d", i))})
		m.ObserveDelivery(receiver.Delivery{Provider: "stripe", Outcome: "unauthorized", Reason: fmt.Sprintf("made-up-%d", i)})
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() == "webhookd_deliveries_total" {
			// (stripe, xendit, unknown) × the fixed outcomes, nothing more.
			require.Len(t, mf.GetMetric(), 3*len(receiver.Outcomes()))
		}
		if mf.GetName() == "webhookd_refusals_total" {
			require.Len(t, mf.GetMetric(), 3*len(receiver.Reasons()))
		}
	}
}

// TestProviderNameMayStartWithADigit: 2C2P's route name is a label of its
// own, not "unknown" (provider names are not identifiers).
func TestProviderNameMayStartWithADigit(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"2c2p"}, Sources: map[string]string{"2c2p": "2c2p"}})
	require.NoError(t, err)
	m.ObserveDelivery(receiver.Delivery{Provider: "2c2p", Source: "2c2p", Outcome: "forwarded"})
	gathered, err := reg.Gather()
	require.NoError(t, err)
	families := map[string]*dto.MetricFamily{}
	for _, mf := range gathered {
		families[mf.GetName()] = mf
	}
	v, ok := value(families, "webhookd_deliveries_total", map[string]string{"provider": "2c2p", "source": "2c2p", "outcome": "forwarded"})
	require.True(t, ok)
	require.Equal(t, 1.0, v)
}

func TestNewRefusesSharedOrBadInput(t *testing.T) {
	_, err := metrics.New(nil, metrics.Options{})
	require.Error(t, err)
	reg := prometheus.NewRegistry()
	_, err = metrics.New(reg, metrics.Options{Providers: []string{"unknown"}})
	require.Error(t, err)
	_, err = metrics.New(reg, metrics.Options{Providers: []string{"stripe"}})
	require.NoError(t, err)
	_, err = metrics.New(reg, metrics.Options{Providers: []string{"stripe"}})
	require.Error(t, err, "a second set on one registry collides")
}

// countingStats counts the Stats calls a scrape makes.
type countingStats struct {
	mu    sync.Mutex
	calls int
	n     int
}

func (c *countingStats) Stats(context.Context) (map[dedupe.State]int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return map[dedupe.State]int{dedupe.Completed: c.n}, nil
}

func TestRecordCountIsReusedForMaxAge(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{RecordsMaxAge: 30 * time.Second, Now: clock})
	require.NoError(t, err)
	store := &countingStats{n: 5}
	require.NoError(t, m.WatchStore(store))
	completed := func() float64 {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range families {
			if mf.GetName() == "webhookd_store_records" {
				for _, x := range mf.GetMetric() {
					if x.GetLabel()[0].GetValue() == "completed" {
						return x.GetGauge().GetValue()
					}
				}
			}
		}
		t.Fatal("no webhookd_store_records{state=\"completed\"}")
		return 0
	}
	require.Equal(t, 5.0, completed())
	store.mu.Lock()
	store.n = 9
	store.mu.Unlock()
	mu.Lock()
	now = now.Add(29 * time.Second)
	mu.Unlock()
	require.Equal(t, 5.0, completed(), "within max age: the last count")
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	require.Equal(t, 9.0, completed(), "past max age: a fresh count")
	require.Equal(t, 2, store.calls)
}

// stripeSignature is the Stripe-Signature header of body signed with
// secret at time at, as the built-in stripe spec signs it.
func stripeSignature(t testing.TB, secret string, at time.Time, body []byte) string {
	t.Helper()
	h, err := spec.SignBuiltin("stripe", secret, at, body)
	require.NoError(t, err)
	return h.Get("Stripe-Signature")
}
