package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/spec"
)

// childEnv makes the test binary run webhookbench instead of the tests,
// so that the helper servers (proxy, redis-receiver) run as subprocesses.
const childEnv = "GO_WANT_WEBHOOKBENCH_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
		stop()
		os.Exit(code)
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// testEnv builds webhookd once for the package's tests and returns an env
// whose helper servers are this test binary.
func testEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs webhookd")
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "webhookbench-test"); buildErr == nil {
			binPath, buildErr = buildWebhookd(binDir)
		}
	})
	require.NoError(t, buildErr)
	return &env{
		webhookd: binPath,
		tmp:      t.TempDir(),
		self: func(args ...string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], args...)
			// Under -race a process sleeps a second at exit so that racing
			// goroutines get reported; a child has no need to.
			cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
			return cmd
		},
	}
}

// A seconds-long side by side: webhookd forwards every event once, the bare
// proxy forwards duplicates, and the table names both with figures; with
// -cpuprofile, webhookd's CPU profile of the run is saved (the proxy has
// none).
func TestCompareLMDBAndProxy(t *testing.T) {
	e := testEnv(t)
	var log strings.Builder
	profiles, traces := t.TempDir(), t.TempDir()
	sums, err := e.compare(context.Background(), compareOpts{
		u: 200, d: 2, c: 16, dup: "mix", duration: traceSeconds * time.Second,
		rounds: 1, warmup: 50, variants: []string{variantLMDB, variantProxy},
		profileDir: profiles, traceDir: traces,
	}, &log)
	require.NoError(t, err, log.String())
	require.Len(t, sums, 2)

	lmdb, proxy := sums[0], sums[1]
	require.Len(t, lmdb.runs, 1)
	o := lmdb.runs[0].once
	require.Positive(t, o.events)
	require.Equal(t, o.events, o.once, "webhookd forwarded some event other than exactly once: %+v", o)
	require.Zero(t, o.lost)
	require.Zero(t, o.wrongKeys)
	require.Positive(t, lmdb.runs[0].perSec)

	require.Len(t, proxy.runs, 1)
	require.Positive(t, proxy.runs[0].once.more, "the bare proxy forwards every copy of an event")

	// CPU figures: measured (the design's process, the load client, the
	// machine all spent something), and plausible: no part above what the
	// machine's cores could give over the window, the machine at least
	// what its parts spent (within a tenth and a few clock ticks), and a
	// delivery costing between 1 µs and 100 ms of CPU.
	for _, s := range sums {
		r := s.runs[0]
		require.NoError(t, r.cpuErr, s.variant)
		require.Len(t, r.cpu.parts, 1, "%s: one process, no server", s.variant)
		u := r.cpu
		capacity := time.Duration(float64(u.wall) * float64(runtime.NumCPU()) * 1.05)
		require.Positive(t, u.server(), s.variant)
		require.Positive(t, u.self, s.variant)
		require.Less(t, u.server(), capacity, s.variant)
		require.Less(t, u.self, capacity, s.variant)
		// /proc/stat samples by tick, a process's times may be scaled to
		// its exact run time: allow a tenth.
		require.GreaterOrEqual(t, u.machine+4*clockTick(), (u.server()+u.self)*9/10, "%s: %+v", s.variant, u)
		require.Less(t, u.machine, capacity, s.variant)
		require.Positive(t, r.forwards, s.variant)
		require.InDelta(t, 50_000, cpuPerDelivery(r), 49_999, s.variant)
		require.InDelta(t, cpuPerDelivery(r)*float64(r.deliveries)/float64(r.forwards), cpuPerForward(r), 1e-6, s.variant)
	}
	// The proxy forwards every delivery; webhookd one per event.
	require.Equal(t, proxy.runs[0].deliveries, proxy.runs[0].forwards)
	require.Equal(t, o.once, lmdb.runs[0].forwards)

	tbl := table(sums)
	require.Contains(t, tbl, "| design | deliveries/s | × proxy | p50 ms | p99 ms | p99 × proxy | p99.9 ms | CPU µs / delivery | × proxy | CPU µs / forward | × proxy |")
	require.Regexp(t, `\| webhookd, LMDB store \(default\) \| \d+ \| \d+\.\d\d \|( [\d.]+ \|){4} [1-9]\d* \| \d+\.\d\d \| [1-9]\d* \| \d+\.\d\d \|`, tbl)
	require.Regexp(t, `\| bare httputil.ReverseProxy \| \d+ \| 1\.00 \|( [\d.]+ \|){4} [1-9]\d* \| 1\.00 \| [1-9]\d* \| 1\.00 \|`, tbl)
	require.Contains(t, tbl, "| design | design's processes | of which its server (Redis, Postgres backends) | load client + stub | whole machine | everything else |")
	require.Regexp(t, `\| bare httputil.ReverseProxy \| \d\.\d\d \| — \| \d\.\d\d \| \d\.\d\d \| -?\d\.\d\d \|`, tbl)
	// The profiles broken down by row, both designs, every row's share of
	// a total.
	require.Contains(t, tbl, "| where | webhookd, LMDB store (default) | bare httputil.ReverseProxy |")
	require.Regexp(t, `\| store writer: LMDB commit and its ops \(cgo, pwrite, fdatasync\) \| [1-9]\d* \(\d+ %\) \| — \|`, tbl)
	require.Regexp(t, `\| net/http server \(read request, write reply\) \| \d+ \(\d+ %\) \| \d+ \(\d+ %\) \|`, tbl)
	require.Regexp(t, `\| \*\*total, µs per delivery\*\* \| \*\*[1-9]\d*\*\* \| \*\*[1-9]\d*\*\* \|`, tbl)

	files, err := os.ReadDir(profiles)
	require.NoError(t, err)
	// Both designs are profiled, so that they break down alike; only
	// webhookd has /metrics.
	require.Len(t, files, 3)
	require.Equal(t, "lmdb-1.metrics", files[0].Name())
	require.Equal(t, "lmdb-1.pprof", files[1].Name())
	require.Equal(t, "proxy-1.pprof", files[2].Name())
	for _, name := range []string{"lmdb-1.pprof", "proxy-1.pprof"} {
		prof, err := os.ReadFile(filepath.Join(profiles, name))
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(prof, []byte{0x1f, 0x8b}), "a gzipped pprof profile: %s", name)
	}
	met, err := os.ReadFile(filepath.Join(profiles, "lmdb-1.metrics"))
	require.NoError(t, err)
	require.Contains(t, string(met), "webhookd_store_commit_duration_seconds_bucket")

	// Execution traces of both, which sched reads: webhookd's handlers
	// wait on its writer, the proxy has none.
	for _, name := range []string{"lmdb-1.trace", "proxy-1.trace"} {
		f, err := os.Open(filepath.Join(traces, name))
		require.NoError(t, err)
		rep, err := readSched(f, defaultWriter)
		f.Close()
		require.NoError(t, err, name)
		require.Positive(t, rep.handlers[schedRunning], name)
		if name == "lmdb-1.trace" {
			require.Positive(t, rep.handlers["waiting: the store (a claim or an enqueue)"], "%v", rep.handlers)
			require.Positive(t, rep.writer[schedSyscall], "the writer commits in cgo: %v", rep.writer)
		} else {
			require.Empty(t, rep.writer)
		}
	}
}

// The floor design: webhookd's LMDB store and forwarder and nothing else.
// It forwards every event exactly once, with the Idempotency-Key webhookd
// sets, and is profiled as the proxy is, without /metrics.
func TestCompareFloor(t *testing.T) {
	e := testEnv(t)
	var log strings.Builder
	profiles := t.TempDir()
	sums, err := e.compare(context.Background(), compareOpts{
		u: 200, d: 2, c: 16, dup: "mix", duration: time.Second,
		rounds: 1, warmup: 50, variants: []string{variantFloor, variantProxy},
		profileDir: profiles,
	}, &log)
	require.NoError(t, err, log.String())
	require.Len(t, sums, 2)
	floor := sums[0].runs[0]
	o := floor.once
	require.Positive(t, o.events)
	require.Equal(t, o.events, o.once, "the floor forwarded some event other than exactly once: %+v", o)
	require.Zero(t, o.lost)
	require.Zero(t, o.wrongKeys)
	require.Equal(t, o.once, floor.forwards)
	require.Less(t, floor.forwards, floor.deliveries, "duplicates are answered from the store")

	tbl := table(sums)
	require.Regexp(t, `\| floor: LMDB claim, forward, answer, nothing else \| \d+ \| \d+\.\d\d \|`, tbl)
	require.Regexp(t, `\| store writer: LMDB commit and its ops \(cgo, pwrite, fdatasync\) \| [1-9]\d* \(\d+ %\) \| — \|`, tbl)
	files, err := os.ReadDir(profiles)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	require.Equal(t, []string{"floor-1.pprof", "proxy-1.pprof"}, names)
}

// A burst to a queue destination beside the sync default: the run waits
// for the queue to drain, every event reaches the core exactly once, and
// the table gives the drain and the CPU per event at the core of both.
func TestCompareQueueDrains(t *testing.T) {
	e := testEnv(t)
	var log strings.Builder
	sums, err := e.compare(context.Background(), compareOpts{
		u: 300, d: 1, c: 16, dup: "mix", count: 300, rounds: 1, warmup: 50,
		variants: []string{variantQueue, variantLMDB}, drainTimeout: time.Minute,
	}, &log)
	require.NoError(t, err, log.String())
	for _, s := range sums {
		require.Len(t, s.runs, 1, s.variant)
		r := s.runs[0]
		require.Equal(t, 300, r.once.events, s.variant)
		require.Equal(t, 300, r.once.once, "%s: every event at the core exactly once: %+v", s.variant, r.once)
		require.Equal(t, 300, r.delivered, s.variant)
		require.Positive(t, cpuPerEventAtCore(r), s.variant)
	}
	q, sync := sums[0].runs[0], sums[1].runs[0]
	require.GreaterOrEqual(t, q.toCore.wall, q.cpu.wall, "the queue's CPU at the core counts its drain")
	require.Zero(t, sync.drain, "a sync design has it at the core when it answers")
	require.Equal(t, sync.cpu, sync.toCore)
	tbl := table(sums)
	require.Contains(t, tbl, "| at the core, s after the load | CPU µs / event at the core | × sync |")
	require.Regexp(t, `\| `+regexp.QuoteMeta(variantLabels[variantLMDB])+` \|.* \| 0 / 300 / 0 \| 0\.00 \| [1-9]\d* \| 1\.00 \|\n`, tbl)
	require.Regexp(t, `\| `+regexp.QuoteMeta(variantLabels[variantQueue])+` \|.* \| 0 / 300 / 0 \| \d+\.\d\d \| [1-9]\d* \| \d+\.\d\d \|\n`, tbl)
}

// The other two dedupe designs, each where its server is at hand (CI has
// Postgres; Redis only where it runs): every event forwarded exactly once.
func TestComparePostgresAndRedis(t *testing.T) {
	e := testEnv(t)
	o := compareOpts{
		u: 100, d: 2, c: 8, dup: "mix", duration: time.Second, rounds: 1, warmup: 20,
		pgDSN: os.Getenv("WEBHOOKD_TEST_POSTGRES_DSN"), redis: "127.0.0.1:6379",
		variants: []string{variantPostgres, variantRedis},
	}
	var log strings.Builder
	sums, err := e.compare(context.Background(), o, &log)
	require.NoError(t, err, log.String())
	ran := 0
	for _, s := range sums {
		if s.skipped != "" {
			t.Logf("%s: %s", s.variant, s.skipped)
			continue
		}
		ran++
		o := s.runs[0].once
		require.Positive(t, o.events, s.variant)
		require.Equal(t, o.events, o.once, "%s forwarded some event other than exactly once: %+v", s.variant, o)
		require.Zero(t, o.wrongKeys, s.variant)
		// The server the design uses is found and did work for it: the
		// Postgres backends of webhookd's connections (by their
		// application_name), redis-server (by INFO's process_id).
		r := s.runs[0]
		require.NoError(t, r.cpuErr, s.variant)
		require.Len(t, r.cpu.parts, 2, s.variant)
		require.Positive(t, r.cpu.parts[0], s.variant)
		require.Positive(t, r.cpu.parts[1], "%s: its server's CPU", s.variant)
		require.Less(t, r.cpu.server(), time.Duration(float64(r.cpu.wall)*float64(runtime.NumCPU())*1.05), s.variant)
	}
	if ran == 0 {
		t.Skip("neither Postgres (WEBHOOKD_TEST_POSTGRES_DSN) nor Redis (127.0.0.1:6379) is here")
	}
	require.Contains(t, table(sums), "| "+variantLabels[variantPostgres]+" |")
}

// Three SIGKILLs under load: nothing lost, duplicates only of events under
// way at a kill, one Idempotency-Key per event.
func TestCrashThreeKills(t *testing.T) {
	e := testEnv(t)
	var log strings.Builder
	r, err := e.crash(context.Background(), crashOpts{
		kills: 3, u: 100, d: 2, c: 8, dup: "mix", lease: 2 * time.Second, timeout: time.Second,
		gapMin: 200 * time.Millisecond, gapMax: 500 * time.Millisecond, store: variantLMDB,
	}, &log)
	require.NoError(t, err, log.String())
	require.Equal(t, 3, r.kills)
	require.Positive(t, r.events)
	require.True(t, r.ok(), "%s", r)
}

// Three SIGKILLs under load against a queue destination, on LMDB and on
// Postgres: the queue drains to the core after the last restart, nothing
// acknowledged is lost, and an event reaches the core again only after a
// kill cut its attempt short.
func TestCrashQueueThreeKills(t *testing.T) {
	for _, store := range []string{variantLMDB, variantPostgres} {
		t.Run(store, func(t *testing.T) {
			dsn := os.Getenv("WEBHOOKD_TEST_POSTGRES_DSN")
			if store == variantPostgres && dsn == "" {
				if os.Getenv("CI") == "true" {
					t.Fatal("CI needs WEBHOOKD_TEST_POSTGRES_DSN")
				}
				t.Skip("no WEBHOOKD_TEST_POSTGRES_DSN")
			}
			e := testEnv(t)
			var log strings.Builder
			r, err := e.crash(context.Background(), crashOpts{
				kills: 3, u: 100, d: 2, c: 8, dup: "mix", lease: 2 * time.Second, timeout: time.Second,
				gapMin: 200 * time.Millisecond, gapMax: 500 * time.Millisecond, store: store, pgDSN: dsn,
				delivery: deliveryQueue, drainTimeout: 30 * time.Second,
			}, &log)
			require.NoError(t, err, log.String())
			require.True(t, r.queue)
			require.Equal(t, 3, r.kills)
			require.Positive(t, r.events)
			require.True(t, r.drain.drained(), "%s", r)
			require.True(t, r.ok(), "%s", r)
		})
	}
}

// A queue that never reaches the core fails the wait with the count of
// the events missing, once its timeout has passed.
func TestWaitDrainedTimesOut(t *testing.T) {
	st, err := newStub(false, 0)
	require.NoError(t, err)
	defer st.Close()
	d := waitDrained(context.Background(), st, []*event{sentEvent("a", 1), sentEvent("b", 0)}, time.Second, 50*time.Millisecond)
	require.False(t, d.drained())
	require.Equal(t, 1, d.missing, "only the event answered 2xx is waited for")
	require.GreaterOrEqual(t, d.took, 50*time.Millisecond)
	require.Contains(t, d.String(), "NOT drained: 1 events")
}

func TestTallyQueueCrash(t *testing.T) {
	t0 := time.Now()
	const lease = 2 * time.Second
	kill := [2]time.Time{t0.Add(time.Second), t0.Add(time.Second + 10*time.Millisecond)}
	at := func(ms ...int) stubEvent {
		s := stubEvent{forwards: len(ms), keys: keys("stripe:a")}
		for _, m := range ms {
			s.arrivals = append(s.arrivals, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		seen  stubEvent
		ok    bool
		check func(*testing.T, *crashReport)
	}{
		{"once", at(500), true, func(t *testing.T, r *crashReport) {
			require.Equal(t, 1, r.once)
			require.Zero(t, r.cutShort)
		}},
		{"again after a kill that cut the attempt short", at(900, 3500), true, func(t *testing.T, r *crashReport) {
			require.Equal(t, 1, r.more)
			require.Equal(t, 1, r.cutShort)
			require.Equal(t, 1, r.mostAtOneKill)
		}},
		{"twice before the kill", at(100, 200), false, func(t *testing.T, r *crashReport) {
			require.Equal(t, 1, r.extraNotInFlight)
		}},
		{"twice after the kill", at(2000, 2100), false, func(t *testing.T, r *crashReport) {
			require.Equal(t, 1, r.extraNotInFlight)
		}},
		{"the kill more than a lease after the forward", at(-1500, 3000), false, func(t *testing.T, r *crashReport) {
			require.Equal(t, 1, r.extraNotInFlight)
		}},
		{"lost", stubEvent{}, false, func(t *testing.T, r *crashReport) {
			require.Equal(t, 1, r.lost)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tallyQueueCrash([]*event{sentEvent("a", 1)}, nil, [][2]time.Time{kill}, map[string]stubEvent{"a": tc.seen}, lease)
			r.drain = drainResult{took: time.Second}
			require.Equal(t, tc.ok, r.ok(), "%s", r)
			tc.check(t, r)
		})
	}
	// One kill forwarding more events again than attempts can be open.
	evs := make([]*event, crashConcurrency+1)
	seen := map[string]stubEvent{}
	for i := range evs {
		evs[i] = sentEvent(fmt.Sprint(i), 1)
		s := at(900, 3500)
		s.keys = keys("stripe:" + evs[i].id)
		seen[evs[i].id] = s
	}
	r := tallyQueueCrash(evs, nil, [][2]time.Time{kill}, seen, lease)
	require.Equal(t, crashConcurrency+1, r.mostAtOneKill)
	require.False(t, r.ok())
	require.False(t, (&crashReport{queue: true, kills: 1, drain: drainResult{missing: 1}}).ok(), "not drained")
}

// A downstream that cycles 503, timeouts, resets and 200: no early 2xx,
// every event accepted exactly once in the end.
func TestFaultsAFewDozenEvents(t *testing.T) {
	e := testEnv(t)
	var log strings.Builder
	r, err := e.faults(context.Background(), faultsOpts{
		variant: variantLMDB, u: 24, d: 2, c: 8, dup: "mix",
		lease: 2 * time.Second, timeout: time.Second,
	}, &log)
	require.NoError(t, err, log.String())
	require.Equal(t, 24, r.events)
	for _, n := range faultNames {
		require.Positive(t, r.stub[n], "the downstream never answered %s: %v", n, r.stub)
	}
	require.True(t, r.ok(), "%s", r)
}

func TestEventIsASignedStripeEvent(t *testing.T) {
	a, err := spec.NewBuiltin("stripe", []string{benchSecret}, nil, nil)
	require.NoError(t, err)
	ev := newEvent(eventID("run1", 2, 3), 7, time.Now(), newSigner())
	require.GreaterOrEqual(t, len(ev.body), 1024)
	require.LessOrEqual(t, len(ev.body), 2048)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: ev.header(), Body: ev.body}))
	parsed, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: ev.body}))
	require.NoError(t, err)
	require.Equal(t, ev.id, parsed.Key)
	require.Equal(t, "payment_intent.succeeded", parsed.Type)
	require.Equal(t, ev.id, eventIDOf(ev.body))

	// A resend an hour later carries a fresh signature that still verifies.
	old := ev.sig
	ev.resign(time.Now().Add(time.Second))
	require.NotEqual(t, old, ev.sig)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: ev.header(), Body: ev.body}))
}

func TestSchedule(t *testing.T) {
	evs := make([]*event, 4)
	for i := range evs {
		evs[i] = &event{id: fmt.Sprint(i)}
	}
	ids := func(es []*event) string {
		var b strings.Builder
		for _, e := range es {
			b.WriteString(e.id)
		}
		return b.String()
	}
	for _, tc := range []struct {
		dup  string
		d    int
		want string
	}{
		{"conc", 2, "00112233"},
		{"seq", 2, "01230123"},
		{"mix", 2, "00122313"},
		{"mix", 3, "000122231313"},
		{"seq", 1, "0123"},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.dup, tc.d), func(t *testing.T) {
			require.Equal(t, tc.want, ids(schedule(evs, tc.d, tc.dup)))
		})
	}
}

// sentEvent is an event that was sent, answered 2xx ok times.
func sentEvent(id string, ok int) *event {
	e := &event{id: id}
	e.sent.Store(1)
	e.ok.Store(int32(ok))
	return e
}

func keys(ks ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(ks))
	for _, k := range ks {
		m[k] = struct{}{}
	}
	return m
}

func TestTallyCrash(t *testing.T) {
	t0 := time.Now()
	kill := [2]time.Time{t0.Add(time.Second), t0.Add(time.Second + 10*time.Millisecond)}
	a, b := sentEvent("a", 1), sentEvent("b", 1)
	// a was under way at the kill, b finished before it.
	kept := []delivery{
		{ev: a, sendResult: sendResult{start: t0.Add(900 * time.Millisecond), end: t0.Add(1005 * time.Millisecond)}},
		{ev: b, sendResult: sendResult{start: t0, end: t0.Add(100 * time.Millisecond), status: 200}},
	}
	good := func(n int, id string) stubEvent { return stubEvent{forwards: n, keys: keys("stripe:" + id)} }
	for _, tc := range []struct {
		name  string
		seen  map[string]stubEvent
		check func(*testing.T, *crashReport)
	}{
		{"each once", map[string]stubEvent{"a": good(1, "a"), "b": good(1, "b")}, func(t *testing.T, r *crashReport) {
			require.True(t, r.ok())
			require.Equal(t, 2, r.once)
			require.Equal(t, 1, r.inFlight)
		}},
		{"extra forward of an event under way at the kill", map[string]stubEvent{"a": good(2, "a"), "b": good(1, "b")}, func(t *testing.T, r *crashReport) {
			require.True(t, r.ok())
			require.Equal(t, 1, r.more)
		}},
		{"extra forward of a finished event", map[string]stubEvent{"a": good(1, "a"), "b": good(2, "b")}, func(t *testing.T, r *crashReport) {
			require.False(t, r.ok())
			require.Equal(t, 1, r.extraNotInFlight)
		}},
		{"lost", map[string]stubEvent{"a": good(1, "a")}, func(t *testing.T, r *crashReport) {
			require.False(t, r.ok())
			require.Equal(t, 1, r.lost)
		}},
		{"two keys", map[string]stubEvent{"a": {forwards: 2, keys: keys("stripe:a", "stripe:a2")}, "b": good(1, "b")}, func(t *testing.T, r *crashReport) {
			require.False(t, r.ok())
			require.Equal(t, 1, r.wrongKeys)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, tallyCrash([]*event{a, b}, kept, [][2]time.Time{kill}, tc.seen))
		})
	}
}

func TestTallyFaults(t *testing.T) {
	t0 := time.Now()
	a := sentEvent("a", 1)
	answered := []delivery{{ev: a, sendResult: sendResult{status: 200, end: t0}}}
	for _, tc := range []struct {
		name  string
		seen  stubEvent
		check func(*testing.T, *faultsReport)
	}{
		{"accepted once, before the answer", stubEvent{accepted: 1, firstAccept: t0.Add(-time.Millisecond)}, func(t *testing.T, r *faultsReport) {
			require.True(t, r.ok())
		}},
		{"answered before the downstream accepted", stubEvent{accepted: 1, firstAccept: t0.Add(time.Millisecond)}, func(t *testing.T, r *faultsReport) {
			require.False(t, r.ok())
			require.Equal(t, 1, r.early)
		}},
		{"never accepted", stubEvent{forwards: 3}, func(t *testing.T, r *faultsReport) {
			require.False(t, r.ok())
			require.Equal(t, 1, r.early)
			require.Equal(t, 1, r.acceptedNever)
		}},
		{"accepted twice", stubEvent{accepted: 2, firstAccept: t0.Add(-time.Millisecond)}, func(t *testing.T, r *faultsReport) {
			require.False(t, r.ok())
			require.Equal(t, 1, r.acceptedTwice)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, tallyFaults([]*event{a}, answered, map[string]stubEvent{"a": tc.seen}))
		})
	}
}

func TestTallyOnce(t *testing.T) {
	evs := []*event{sentEvent("a", 1), sentEvent("b", 1), sentEvent("c", 0), {id: "unsent"}}
	seen := map[string]stubEvent{
		"a": {forwards: 1, keys: keys("stripe:a")},
		"b": {forwards: 2, keys: keys("")},
	}
	o := tallyOnce(evs, seen, true)
	require.Equal(t, onceResult{events: 3, answered: 2, zero: 1, once: 1, more: 1, wrongKeys: 1}, o)
	o = tallyOnce(evs, seen, false)
	require.Zero(t, o.wrongKeys)
}

func TestStatTicks(t *testing.T) {
	// Fields 14 and 15 of proc(5)'s stat line are utime and stime.
	line := func(comm string) string {
		return "4242 (" + comm + ") S 1 4242 4242 0 -1 4194560 1000 0 0 0 731 269 0 0 20 0 9 0 100 0 0 18446744073709551615\n"
	}
	for _, tc := range []struct {
		name, stat string
		want       uint64
		bad        bool
	}{
		{name: "plain", stat: line("webhookd"), want: 1000},
		{name: "spaces and parentheses in the name", stat: line("a b) S 1 2 (c"), want: 1000},
		{name: "truncated", stat: "4242 (webhookd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 731", bad: true},
		{name: "no name", stat: "4242 webhookd S", bad: true},
		{name: "not a number", stat: strings.Replace(line("x"), " 731 ", " seven ", 1), bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statTicks([]byte(tc.stat))
			if tc.bad {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// This process's CPU read from /proc agrees with getrusage's after some
// work, and both grow by about what was burnt.
func TestProcCPUMatchesRusage(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	require.Equal(t, 10*time.Millisecond, clockTick(), "USER_HZ is 100 on Linux")
	before, err := procCPU(os.Getpid())
	require.NoError(t, err)
	// Spin until getrusage counts 300 ms of this process's CPU, not for
	// 300 ms of wall time: on a loaded machine a wall-time loop may get a
	// fifth of a core.
	selfBefore, err := selfCPU()
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for x := 0; ; x++ {
		if x%100000 == 0 {
			now, err := selfCPU()
			require.NoError(t, err)
			if now-selfBefore >= 300*time.Millisecond || time.Now().After(deadline) {
				break
			}
		}
	}
	after, err := procCPU(os.Getpid())
	require.NoError(t, err)
	self, err := selfCPU()
	require.NoError(t, err)
	// /proc counts whole ticks of 10 ms, so it may trail getrusage by a
	// few; a wrong tick or field would be off by far more.
	require.GreaterOrEqual(t, after-before, 250*time.Millisecond, "a busy loop of 300 ms of CPU")
	require.InDelta(t, float64(self), float64(after), float64(50*time.Millisecond), "/proc and getrusage")
	busy, err := machineBusy()
	require.NoError(t, err)
	require.Greater(t, busy, after)
}

func TestWithSearchPath(t *testing.T) {
	require.Equal(t, "postgres://h/db?search_path=s", withSearchPath("postgres://h/db", "s"))
	require.Equal(t, "postgres://h/db?sslmode=disable&search_path=s", withSearchPath("postgres://h/db?sslmode=disable", "s"))
	require.Equal(t, "host=h dbname=db search_path=s", withSearchPath("host=h dbname=db", "s"))
}

func TestRedisAnswerRoundTrip(t *testing.T) {
	st, ct, body := decodeAnswer(encodeAnswer(201, "application/json", []byte("{\n}")))
	require.Equal(t, 201, st)
	require.Equal(t, "application/json", ct)
	require.Equal(t, "{\n}", string(body))
}

// TestPostgresSkipNamesTheTestsVariable: a Postgres variant skipped for want
// of a DSN names the variable this package's tests read, not only the
// load tool's own.
func TestPostgresSkipNamesTheTestsVariable(t *testing.T) {
	src, err := os.ReadFile("bench_test.go")
	require.NoError(t, err)
	require.Contains(t, string(src), `os.Getenv("WEBHOOKD_TEST_POSTGRES_DSN")`)
	require.Contains(t, errNoPostgres.Error(), "WEBHOOKD_TEST_POSTGRES_DSN")
	require.ErrorIs(t, errNoPostgres, errSkipped)
}

// A design named with beforeSuffix runs the -before binary under the base
// design's label; without -before it is skipped, not run with the other.
func TestBeforeVariants(t *testing.T) {
	tests := []struct{ variant, label string }{
		{variantLMDB + beforeSuffix, variantLabels[variantLMDB] + ", before"},
		{variantTiered + beforeSuffix, variantLabels[variantTiered] + ", before"},
		{variantLMDB, variantLabels[variantLMDB]},
	}
	for _, tt := range tests {
		require.Equal(t, tt.label, label(tt.variant), tt.variant)
	}
	e := &env{webhookd: "/nonexistent/webhookd", tmp: t.TempDir()}
	_, _, err := e.startVariant(context.Background(), variantLMDB+beforeSuffix, targetOpts{dir: t.TempDir()})
	require.ErrorIs(t, err, errSkipped)
	require.ErrorContains(t, err, "needs -before")
}

// TestPlanBuildsOffTheClock: a count-bounded load is built and signed
// whole before its clients start, a duration run one block ahead, so that
// no timed client waits for the feeder.
func TestPlanBuildsOffTheClock(t *testing.T) {
	ctx := context.Background()
	pl := planLoad(ctx, loadSpec{run: "plan", u: 10, d: 2, count: 45})
	require.Len(t, pl.blocks, 3, "every block of a count run is built before run")
	var ids []string
	for evs := range pl.blocks {
		for _, e := range evs {
			ids = append(ids, e.id)
			require.NotEmpty(t, e.sig)
		}
	}
	require.Len(t, ids, 30)
	require.Equal(t, eventID("plan", 2, 9), ids[29])

	pl = planLoad(ctx, loadSpec{run: "plan", u: 10, d: 2, duration: time.Hour})
	first := <-pl.blocks
	require.Equal(t, eventID("plan", 0, 0), first[0].id)
	next := <-pl.blocks // built in the background while the first was sent
	require.Equal(t, eventID("plan", 1, 0), next[0].id)
	close(pl.quit)
	for range pl.blocks { // the builder stops and closes
	}
}

// BenchmarkNewEvent is what the feeder spends on one event, built and
// signed: what planLoad keeps off the clock.
//
//	go test -run '^$' -bench NewEvent ./internal/bench
func BenchmarkNewEvent(b *testing.B) {
	sign, now := newSigner(), time.Now()
	for i := range b.N {
		newEvent(eventID("bench", 0, i), i, now, sign)
	}
}
