package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// compareOpts configure a side-by-side run.
type compareOpts struct {
	u, d, c  int
	dup      string
	duration time.Duration
	count    int
	rounds   int
	warmup   int
	variants []string
	pgDSN    string
	redis    string
	// profileDir, when set, receives a CPU profile of webhookd
	// (<design>-<round>.pprof) taken over each timed run.
	profileDir string
	// traceDir, when set, receives an execution trace of webhookd and the
	// proxy (<design>-<round>.trace) of the timed run's first
	// traceSeconds, which "webhookbench sched" reads.
	traceDir string
	// drainTimeout bounds the wait, after the load, for a queue
	// destination's events to reach the core.
	drainTimeout time.Duration
	// queueConcurrency is the queue design's destination concurrency
	// (0: webhookd's default).
	queueConcurrency int
}

// defaultDrainTimeout is compare's and crash's bound on a queue's drain.
const defaultDrainTimeout = 5 * time.Minute

// runStats is one measured run of one design.
type runStats struct {
	perSec         float64
	p50, p99, p999 time.Duration
	statuses       map[int]int
	once           onceResult
	deliveries     int // answered or failed in the timed load
	forwards       int // requests that reached the stub in it
	// cpu is what the design's processes, the load client and the machine
	// spent over the timed load; cpuErr says why it is unknown.
	cpu    cpuUse
	cpuErr error
	// drain is how long after the timed load the last event reached the
	// core (zero for a design that forwards before it answers); toCore
	// is the CPU from the load's start to then, and delivered the
	// requests that reached the stub by then.
	drain     time.Duration
	toCore    cpuUse
	delivered int
	// cpuRows is the run's CPU profile by row (cpurows.go), when profiled.
	cpuRows map[string]time.Duration
}

// cpuPerEventAtCore is the design's CPU time per request that reached the
// core, from the load's start until the last one had (a queue's drain
// included), in µs: the whole cost of an event for a queue destination,
// where cpuPerForward would leave out the drain that follows the load.
func cpuPerEventAtCore(r runStats) float64 {
	if r.cpuErr != nil {
		return 0
	}
	return perUnit(r.toCore.server(), r.delivered)
}

func drainSeconds(r runStats) float64 { return r.drain.Seconds() }

// async reports whether a design answers the gateway before the core has
// the event, so that a run ends only once its queue has drained.
func async(variant string) bool { return strings.TrimSuffix(variant, beforeSuffix) == variantQueue }

// serverCPU is the design's CPU time over the run, zero when unknown.
func (r runStats) serverCPU() time.Duration {
	if r.cpuErr != nil {
		return 0
	}
	return r.cpu.server()
}

// cpuPerDelivery is the design's CPU time per delivery, in µs.
func cpuPerDelivery(r runStats) float64 { return perUnit(r.serverCPU(), r.deliveries) }

// cpuPerForward is the design's CPU time per request that reached the
// downstream, in µs: one per event for a design that dedupes, one per
// delivery for the bare proxy.
func cpuPerForward(r runStats) float64 { return perUnit(r.serverCPU(), r.forwards) }

func perUnit(t time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(t) / float64(time.Microsecond) / float64(n)
}

// The CPU time over the run, as cores kept busy: the design's processes,
// the server it uses alone, the load client and stub, the whole machine.
func serverCores(r runStats) float64 { return r.cpu.cores(r.serverCPU()) }
func storeCores(r runStats) float64 {
	if r.cpuErr != nil || len(r.cpu.parts) < 2 {
		return 0
	}
	return r.cpu.cores(r.cpu.server() - r.cpu.parts[0])
}
func selfCores(r runStats) float64    { return r.cpu.cores(r.cpu.self) }
func machineCores(r runStats) float64 { return r.cpu.cores(r.cpu.machine) }

// cpuKnown reports whether every run has CPU figures.
func (v *variantSummary) cpuKnown() bool {
	for _, r := range v.runs {
		if r.cpuErr != nil {
			return false
		}
	}
	return len(v.runs) > 0
}

// variantSummary is one design over every round.
type variantSummary struct {
	variant string
	skipped string // why it did not run, if it did not
	runs    []runStats
}

// median returns the median of f over the runs.
func (v *variantSummary) median(f func(runStats) float64) float64 {
	xs := make([]float64, len(v.runs))
	for i, r := range v.runs {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func perSec(r runStats) float64  { return r.perSec }
func p50ms(r runStats) float64   { return ms(r.p50) }
func p99ms(r runStats) float64   { return ms(r.p99) }
func p999ms(r runStats) float64  { return ms(r.p999) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// compare runs every design o.rounds times, alternating (A B A B), and
// returns their summaries in o.variants order. Progress goes to log.
func (e *env) compare(ctx context.Context, o compareOpts, log io.Writer) ([]*variantSummary, error) {
	sums := make([]*variantSummary, len(o.variants))
	for i, v := range o.variants {
		sums[i] = &variantSummary{variant: v}
	}
	for round := 1; round <= o.rounds; round++ {
		for _, s := range sums {
			if s.skipped != "" {
				continue
			}
			st, err := e.measure(ctx, s.variant, o, filepath.Join(e.tmp, fmt.Sprintf("%s-%d", s.variant, round)))
			if errors.Is(err, errSkipped) {
				s.skipped = err.Error()
				fmt.Fprintf(log, "%s: %v\n", s.variant, err)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", s.variant, round, err)
			}
			s.runs = append(s.runs, st)
			fmt.Fprintf(log, "round %d %-8s %8.0f deliveries/s  p50 %6.2f ms  p99 %7.2f ms  p99.9 %7.2f ms  %s  events fwd 0/1/>1: %d/%d/%d  %s\n",
				round, s.variant, st.perSec, ms(st.p50), ms(st.p99), ms(st.p999), statusString(st.statuses),
				st.once.zero, st.once.once, st.once.more, cpuString(st))
		}
	}
	return sums, ctx.Err()
}

// measure starts one design behind a fresh stub, warms it up, runs the
// load and stops it.
func (e *env) measure(ctx context.Context, variant string, o compareOpts, dir string) (runStats, error) {
	st, err := newStub(false, 0)
	if err != nil {
		return runStats{}, err
	}
	defer st.Close()
	if o.drainTimeout <= 0 {
		o.drainTimeout = defaultDrainTimeout
	}
	to := targetOpts{downstream: st.URL, pgDSN: o.pgDSN, redisAddr: o.redis, dir: dir, queueConcurrency: o.queueConcurrency}
	profile := o.profileDir != "" && o.duration >= time.Second && variant != variantRedis
	traced := o.traceDir != "" && o.duration >= traceSeconds*time.Second && variant != variantRedis
	if profile || traced {
		if to.pprofAddr, err = freeAddr(); err != nil {
			return runStats{}, err
		}
	}
	p, cleanup, err := e.startVariant(ctx, variant, to)
	if err != nil {
		return runStats{}, err
	}
	defer cleanup()
	client := newClient(o.c, 30*time.Second)
	defer client.CloseIdleConnections()
	url := func() string { return p.url() }
	if o.warmup > 0 {
		// Opens the client's connections and the target's, and lets the
		// store grow its files, before anything is timed.
		w := runLoad(ctx, loadSpec{url: url, client: client, run: newRunID() + "w", u: max(o.warmup/o.d, 1), d: o.d, dup: o.dup, c: o.c, count: o.warmup})
		if async(variant) {
			// A queue still delivering the warm-up would spend the timed
			// load's CPU on it.
			if d := waitDrained(ctx, st, w.events, 0, o.drainTimeout); !d.drained() {
				return runStats{}, fmt.Errorf("warm-up: %s", d)
			}
		}
		st.reset()
	}
	load := planLoad(ctx, loadSpec{url: url, client: client, run: newRunID(), u: o.u, d: o.d, dup: o.dup, c: o.c, duration: o.duration, count: o.count})
	var profiled chan error
	if profile {
		profiled = make(chan error, 1)
		out := filepath.Join(o.profileDir, filepath.Base(dir)+".pprof")
		go func() { profiled <- fetchProfile(ctx, to.pprofAddr, o.duration, out) }()
	}
	var tracedOut chan error
	if traced {
		tracedOut = make(chan error, 1)
		out := filepath.Join(o.traceDir, filepath.Base(dir)+".trace")
		url := fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%d", to.pprofAddr, traceSeconds)
		go func() { tracedOut <- fetchTo(ctx, url, out) }()
	}
	before := takeCPU(ctx, p.cpu)
	res := load.run(ctx)
	use, cpuErr := cpuBetween(before, takeCPU(ctx, p.cpu))
	forwards := countForwards(st.snapshot())
	toCore, drain := use, drainResult{}
	if async(variant) {
		if drain = waitDrained(ctx, st, res.events, 0, o.drainTimeout); !drain.drained() {
			return runStats{}, fmt.Errorf("the queue after the load: %s", drain)
		}
		if toCore, err = cpuBetween(before, takeCPU(ctx, p.cpu)); err != nil {
			cpuErr = err
		}
	}
	seen := st.snapshot()
	if tracedOut != nil {
		if err := <-tracedOut; err != nil {
			return runStats{}, fmt.Errorf("execution trace: %w", err)
		}
	}
	var rows map[string]time.Duration
	if profiled != nil {
		if err := <-profiled; err != nil {
			return runStats{}, fmt.Errorf("CPU profile: %w", err)
		}
		if rows, err = cpuBreakdown(filepath.Join(o.profileDir, filepath.Base(dir)+".pprof")); err != nil {
			return runStats{}, fmt.Errorf("CPU profile: %w", err)
		}
		// The store's commit latency and batch sizes, which a CPU profile
		// does not show: a synced commit waits on the disk, not the CPU.
		if servesMetrics(variant) {
			if err := fetchTo(ctx, "http://"+p.addr+"/metrics", filepath.Join(o.profileDir, filepath.Base(dir)+".metrics")); err != nil {
				return runStats{}, fmt.Errorf("metrics: %w", err)
			}
		}
	}
	return runStats{
		perSec: res.perSecond(),
		p50:    res.quantile(0.50), p99: res.quantile(0.99), p999: res.quantile(0.999),
		statuses:   res.statuses,
		once:       tallyOnce(res.events, seen, dedupes(variant)),
		deliveries: res.deliveries, forwards: forwards,
		cpu: use, cpuErr: cpuErr,
		drain: drain.took, toCore: toCore, delivered: countForwards(seen),
		cpuRows: rows,
	}, nil
}

// countForwards sums the requests the stub saw.
func countForwards(seen map[string]stubEvent) int {
	n := 0
	for _, ev := range seen {
		n += ev.forwards
	}
	return n
}

// fetchProfile saves a CPU profile of the webhookd whose pprof listener is
// addr, taken over the whole seconds of d (the timed load), to path.
func fetchProfile(ctx context.Context, addr string, d time.Duration, path string) error {
	return fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d/time.Second)), path)
}

// fetchTo saves the body of a GET of url to path.
func fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuString formats one run's CPU figures for the progress log.
func cpuString(r runStats) string {
	if r.cpuErr != nil {
		return "CPU unknown: " + r.cpuErr.Error()
	}
	store := ""
	if len(r.cpu.parts) > 1 {
		store = fmt.Sprintf(" (its server %.2f)", storeCores(r))
	}
	return fmt.Sprintf("CPU %.0f µs/delivery %.0f µs/forward, cores busy: design %.2f%s, load+stub %.2f, machine %.2f",
		cpuPerDelivery(r), cpuPerForward(r), serverCores(r), store, selfCores(r), machineCores(r))
}

// statusString formats status counts as "200: 9000, 409: 3" (0 is "error").
func statusString(m map[int]int) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(m)) {
		name := strconv.Itoa(s)
		if s == 0 {
			name = "error"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, m[s]))
	}
	return strings.Join(parts, ", ")
}

// table renders the summaries as markdown: medians, and ratios to the
// bare proxy; then where the CPU went.
func table(sums []*variantSummary) string {
	// base is the proxy, every ratio's denominator; sync, webhookd's
	// sync default on LMDB, that of the CPU per event at the core.
	var base, syncBase *variantSummary
	for _, s := range sums {
		if s.variant == variantProxy && len(s.runs) > 0 {
			base = s
		}
		if s.variant == variantLMDB && len(s.runs) > 0 {
			syncBase = s
		}
	}
	// ratio formats s's median of f over the proxy's.
	ratio := func(s *variantSummary, f func(runStats) float64) string {
		switch {
		case base == nil:
			return "—"
		case base == s:
			return "1.00"
		}
		if b := base.median(f); b > 0 {
			return fmt.Sprintf("%.2f", s.median(f)/b)
		}
		return "—"
	}
	cpuRatio := func(s *variantSummary, f func(runStats) float64) string {
		if base == nil || !base.cpuKnown() || !s.cpuKnown() {
			return "—"
		}
		return ratio(s, f)
	}
	var b strings.Builder
	b.WriteString("| design | deliveries/s | × proxy | p50 ms | p99 ms | p99 × proxy | p99.9 ms | CPU µs / delivery | × proxy | CPU µs / forward | × proxy | answers (all rounds) | events forwarded 0 / 1 / >1 | at the core, s after the load | CPU µs / event at the core | × sync |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |\n")
	for _, s := range sums {
		if len(s.runs) == 0 {
			fmt.Fprintf(&b, "| %s | skipped: %s | | | | | | | | | | | | | | |\n", label(s.variant), strings.TrimPrefix(s.skipped, errSkipped.Error()+": "))
			continue
		}
		statuses := make(map[int]int)
		var o onceResult
		for _, r := range s.runs {
			for k, n := range r.statuses {
				statuses[k] += n
			}
			o.zero += r.once.zero
			o.once += r.once.once
			o.more += r.once.more
			o.lost += r.once.lost
			o.wrongKeys += r.once.wrongKeys
		}
		perDelivery, perForward, atCore, atCoreRatio := "—", "—", "—", "—"
		if s.cpuKnown() {
			perDelivery = fmt.Sprintf("%.0f", s.median(cpuPerDelivery))
			perForward = fmt.Sprintf("%.0f", s.median(cpuPerForward))
			atCore = fmt.Sprintf("%.0f", s.median(cpuPerEventAtCore))
			if syncBase != nil && syncBase.cpuKnown() && syncBase.median(cpuPerEventAtCore) > 0 {
				atCoreRatio = fmt.Sprintf("%.2f", s.median(cpuPerEventAtCore)/syncBase.median(cpuPerEventAtCore))
			}
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.2f | %.2f | %s | %.2f | %s | %s | %s | %s | %s | %d / %d / %d | %.2f | %s | %s |\n",
			label(s.variant), s.median(perSec), ratio(s, perSec), s.median(p50ms), s.median(p99ms), ratio(s, p99ms), s.median(p999ms),
			perDelivery, cpuRatio(s, cpuPerDelivery), perForward, cpuRatio(s, cpuPerForward),
			statusString(statuses), o.zero, o.once, o.more, s.median(drainSeconds), atCore, atCoreRatio)
	}

	fmt.Fprintf(&b, "\nCPU over the timed load, in cores kept busy (medians; the machine has %d):\n\n", runtime.NumCPU())
	b.WriteString("| design | design's processes | of which its server (Redis, Postgres backends) | load client + stub | whole machine | everything else |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range sums {
		if !s.cpuKnown() {
			why := "skipped"
			for _, r := range s.runs {
				if r.cpuErr != nil {
					why = r.cpuErr.Error()
				}
			}
			fmt.Fprintf(&b, "| %s | unknown: %s | | | | |\n", label(s.variant), why)
			continue
		}
		store := "—"
		if len(s.runs[0].cpu.parts) > 1 {
			store = fmt.Sprintf("%.2f", s.median(storeCores))
		}
		fmt.Fprintf(&b, "| %s | %.2f | %s | %.2f | %.2f | %.2f |\n", label(s.variant),
			s.median(serverCores), store, s.median(selfCores), s.median(machineCores),
			s.median(func(r runStats) float64 { return machineCores(r) - serverCores(r) - selfCores(r) }))
	}
	b.WriteString(breakdownTable(sums))
	return b.String()
}
