package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/stripe"
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
	profiles := t.TempDir()
	sums, err := e.compare(context.Background(), compareOpts{
		u: 200, d: 2, c: 16, dup: "mix", duration: 1500 * time.Millisecond,
		rounds: 1, warmup: 50, variants: []string{variantLMDB, variantProxy},
		profileDir: profiles,
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

	tbl := table(sums)
	require.Contains(t, tbl, "| design | deliveries/s | × proxy |")
	require.Regexp(t, `\| webhookd, LMDB store \(default\) \| \d+ \| \d+\.\d\d \|`, tbl)
	require.Regexp(t, `\| bare httputil.ReverseProxy \| \d+ \| 1\.00 \|`, tbl)

	files, err := os.ReadDir(profiles)
	require.NoError(t, err)
	require.Len(t, files, 2)
	require.Equal(t, "lmdb-1.metrics", files[0].Name())
	require.Equal(t, "lmdb-1.pprof", files[1].Name())
	prof, err := os.ReadFile(filepath.Join(profiles, "lmdb-1.pprof"))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(prof, []byte{0x1f, 0x8b}), "a gzipped pprof profile")
	met, err := os.ReadFile(filepath.Join(profiles, "lmdb-1.metrics"))
	require.NoError(t, err)
	require.Contains(t, string(met), "webhookd_store_commit_duration_seconds_bucket")
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
	a, err := stripe.New([]string{benchSecret}, stripe.DefaultTolerance)
	require.NoError(t, err)
	ev := newEvent(eventID("run1", 2, 3), 7, time.Now())
	require.GreaterOrEqual(t, len(ev.body), 1024)
	require.LessOrEqual(t, len(ev.body), 2048)
	require.NoError(t, a.Verify(ev.header(), ev.body))
	parsed, err := a.Parse(ev.body)
	require.NoError(t, err)
	require.Equal(t, ev.id, parsed.Key)
	require.Equal(t, "payment_intent.succeeded", parsed.Type)
	require.Equal(t, ev.id, eventIDOf(ev.body))

	// A resend an hour later carries a fresh signature that still verifies.
	old := ev.sig
	ev.resign(time.Now().Add(time.Second))
	require.NotEqual(t, old, ev.sig)
	require.NoError(t, a.Verify(ev.header(), ev.body))
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
