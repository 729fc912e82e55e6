package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Main runs webhookbench with args (without the program name) and returns
// its exit status: 0, 1 when a check failed or a run broke, 2 for bad
// usage.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "webhookbench:", err)
		return 1
	}
	return run(ctx, args, stdout, stderr, func(a ...string) *exec.Cmd { return exec.Command(self, a...) })
}

const usage = `webhookbench: measure webhookd against the designs it replaces (see BENCHMARKS.md).

Usage:
  webhookbench compare [flags]         side by side: webhookd (LMDB, Postgres), a bare
                                       reverse proxy, Redis SET NX; alternating rounds
  webhookbench crash [flags]           kill -9 webhookd under load, restart, check nothing is lost
  webhookbench faults [flags]          a failing downstream: check no early 2xx, each event taken once
  webhookbench sched [flags] TRACE...  where the HTTP handlers' and the store writer's time went,
                                       from execution traces (compare -trace)
  webhookbench proxy [flags]           (helper) the bare httputil.ReverseProxy
  webhookbench redis-receiver [flags]  (helper) the Redis SET NX receiver
  webhookbench floor-receiver [flags]  (helper) the floor: LMDB claim, forward, answer

Run "webhookbench COMMAND -h" for a command's flags.
`

// run is Main with the way to re-execute this program given, so that
// tests can run the helper servers from the test binary.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, self func(...string) *exec.Cmd) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "proxy":
		return runProxy(ctx, args, stderr)
	case "redis-receiver":
		return runRedisReceiver(ctx, args, stderr)
	case "floor-receiver":
		return runFloorReceiver(ctx, args, stderr)
	case "sched":
		return runSched(args, stdout, stderr)
	case "compare", "crash", "faults":
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "webhookbench: unknown command %q\n\n%s", cmd, usage)
		return 2
	}

	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	webhookd := fs.String("webhookd", "", "webhookd binary to run (default: go build the checkout's cmd/webhookd into a temporary directory; run from cmd/webhookbench)")
	pgDSN := fs.String("postgres-dsn", firstEnv("WEBHOOKBENCH_POSTGRES_DSN", "WEBHOOKD_TEST_POSTGRES_DSN"), "Postgres for the postgres design; each run gets a fresh schema, dropped after (default $WEBHOOKBENCH_POSTGRES_DSN or $WEBHOOKD_TEST_POSTGRES_DSN)")
	redisAddr := fs.String("redis", "127.0.0.1:6379", "Redis for the redis design (\"\" skips it)")
	keep := fs.Bool("keep", false, "keep the temporary directory (data dirs, each target's log)")
	var u, d, c int
	var dup string
	var dflt struct{ u, d, c int }
	switch cmd {
	case "compare":
		dflt.u, dflt.d, dflt.c = 2000, 2, 64
	case "crash":
		dflt.u, dflt.d, dflt.c = 200, 2, 16
	case "faults":
		dflt.u, dflt.d, dflt.c = 100, 2, 8
	}
	fs.IntVar(&u, "u", dflt.u, "unique events per block")
	fs.IntVar(&d, "d", dflt.d, "deliveries of each event")
	fs.IntVar(&c, "c", dflt.c, "concurrent clients")
	fs.StringVar(&dup, "dup", "mix", "how an event's copies meet: seq (one after another), conc (at the same time) or mix (half each)")

	var co compareOpts
	var cr crashOpts
	var fo faultsOpts
	var variants, before string
	switch cmd {
	case "compare":
		fs.DurationVar(&co.duration, "duration", 10*time.Second, "load time per design and round (0: send -count deliveries instead)")
		fs.IntVar(&co.count, "count", 0, "deliveries per design and round when -duration is 0 (default u*d)")
		fs.IntVar(&co.rounds, "rounds", 3, "rounds; designs alternate within each")
		fs.IntVar(&co.warmup, "warmup", 500, "untimed deliveries of other events before each run")
		fs.StringVar(&variants, "variants", "lmdb,proxy,postgres,redis", "designs to compare, in order: lmdb, proxy, postgres, postgres2 (two nodes on one Postgres, the load alternating), tiered, queue (LMDB, delivery: queue), floor (LMDB claim, forward and answer, nothing else), redis")
		fs.StringVar(&before, "before", "", "a second webhookd binary, run by the designs named lmdb-before, postgres-before, tiered-before: a change against its baseline in one run")
		fs.DurationVar(&co.drainTimeout, "drain-timeout", defaultDrainTimeout, "for the queue design, how long to wait after the load for every event to reach the core (the run fails past it)")
		fs.IntVar(&co.queueConcurrency, "queue-concurrency", 0, "the queue design's destination concurrency (0: webhookd's default)")
		fs.StringVar(&co.traceDir, "trace", "", fmt.Sprintf("directory for execution traces of every design but redis, one per round over the timed load's first %d s (needs -duration of %d s or more), which \"webhookbench sched\" reads", traceSeconds, traceSeconds))
		fs.StringVar(&co.profileDir, "cpuprofile", "", "directory for CPU profiles of every design but redis (webhookd and the proxy), one per round over the timed load, through WEBHOOKD_PPROF_ADDR (needs -duration of 1s or more), and its /metrics after each")
	case "crash":
		fs.IntVar(&cr.kills, "kills", 10, "SIGKILLs under load")
		fs.DurationVar(&cr.lease, "lease", 2*time.Second, "WEBHOOKD_LEASE")
		fs.DurationVar(&cr.timeout, "dispatch-timeout", time.Second, "WEBHOOKD_DISPATCH_TIMEOUT (below the lease)")
		fs.DurationVar(&cr.gapMin, "gap-min", 200*time.Millisecond, "least load time before a kill")
		fs.DurationVar(&cr.gapMax, "gap-max", time.Second, "most load time before a kill")
		fs.StringVar(&cr.store, "store", variantLMDB, "webhookd's store: lmdb, postgres or tiered")
		fs.StringVar(&cr.delivery, "delivery", deliverySync, "the destination's delivery: sync, or queue (store and forward: the check waits for the queue to reach the core)")
		fs.DurationVar(&cr.drainTimeout, "drain-timeout", defaultDrainTimeout, "with -delivery queue, how long to wait after the resends for every event to reach the core")
	case "faults":
		fs.DurationVar(&fo.lease, "lease", 3*time.Second, "lease of the design under test")
		fs.DurationVar(&fo.timeout, "dispatch-timeout", time.Second, "forward budget of the design under test (below the lease)")
		fs.StringVar(&fo.variant, "variant", variantLMDB, "design under test: lmdb, postgres, tiered, redis or proxy")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || u < 1 || d < 1 || c < 1 || !validDup(dup) {
		fmt.Fprintf(stderr, "webhookbench %s: need -u, -d, -c of at least 1, -dup seq, conc or mix, and no arguments\n", cmd)
		return 2
	}

	tmp, err := os.MkdirTemp("", "webhookbench")
	if err != nil {
		fmt.Fprintln(stderr, "webhookbench:", err)
		return 1
	}
	if *keep {
		fmt.Fprintln(stderr, "webhookbench: keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	e := &env{self: self, webhookd: *webhookd, before: before, tmp: tmp}
	if e.webhookd == "" {
		fmt.Fprintln(stderr, "webhookbench: building webhookd")
		if e.webhookd, err = buildWebhookd(tmp); err != nil {
			fmt.Fprintln(stderr, "webhookbench:", err)
			return 1
		}
	}

	switch cmd {
	case "compare":
		co.u, co.d, co.c, co.dup, co.pgDSN, co.redis = u, d, c, dup, *pgDSN, *redisAddr
		co.variants = strings.Split(variants, ",")
		if co.rounds < 1 || (co.duration <= 0 && co.count < 0) || co.drainTimeout <= 0 || co.queueConcurrency < 0 {
			fmt.Fprintln(stderr, "webhookbench compare: -rounds must be at least 1, -drain-timeout positive, -queue-concurrency not negative")
			return 2
		}
		fmt.Fprintf(stdout, "U=%d unique events, D=%d deliveries each (%s), C=%d clients, %s per design and round, %d rounds\n\n",
			u, d, dup, c, runLength(co), co.rounds)
		sums, err := e.compare(ctx, co, stdout)
		if err != nil {
			fmt.Fprintln(stderr, "webhookbench:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nMedians of %d rounds:\n\n%s", co.rounds, table(sums))
		return 0
	case "crash":
		cr.u, cr.d, cr.c, cr.dup, cr.pgDSN = u, d, c, dup, *pgDSN
		if cr.kills < 1 || cr.timeout >= cr.lease || cr.gapMin <= 0 || cr.gapMax < cr.gapMin ||
			(cr.delivery != deliverySync && cr.delivery != deliveryQueue) || cr.drainTimeout <= 0 {
			fmt.Fprintln(stderr, "webhookbench crash: need -kills ≥ 1, -dispatch-timeout below -lease, 0 < -gap-min ≤ -gap-max, -delivery sync or queue, a positive -drain-timeout")
			return 2
		}
		r, err := e.crash(ctx, cr, stdout)
		if err != nil {
			fmt.Fprintln(stderr, "webhookbench:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\n| crash mode (%s store, delivery %s, lease %s, dispatch timeout %s) | |\n| --- | --- |\n%s", cr.store, cr.delivery, cr.lease, cr.timeout, r)
		return exitFor(r.ok())
	default:
		fo.u, fo.d, fo.c, fo.dup, fo.pgDSN, fo.redis = u, d, c, dup, *pgDSN, *redisAddr
		if fo.timeout >= fo.lease {
			fmt.Fprintln(stderr, "webhookbench faults: -dispatch-timeout must be below -lease")
			return 2
		}
		r, err := e.faults(ctx, fo, stdout)
		if err != nil {
			fmt.Fprintln(stderr, "webhookbench:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\n| faults mode (lease %s, dispatch timeout %s) | |\n| --- | --- |\n%s", fo.lease, fo.timeout, r)
		return exitFor(r.ok())
	}
}

func runLength(o compareOpts) string {
	if o.duration > 0 {
		return o.duration.String()
	}
	return fmt.Sprintf("%d deliveries", max(o.count, o.u*o.d))
}

func exitFor(ok bool) int {
	if ok {
		return 0
	}
	return 1
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// buildWebhookd builds the webhookd command into dir: the one of the
// checkout that this tool's go.mod replaces the webhookd module with, when
// run from cmd/webhookbench (go.mod lists it as a tool, so that its
// dependencies are in the build list).
func buildWebhookd(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil && os.Getenv("GOROOT") != "" {
		goTool, err = filepath.Join(os.Getenv("GOROOT"), "bin", "go"), nil
	}
	if err != nil {
		return "", fmt.Errorf("no go command to build webhookd with (or pass -webhookd): %w", err)
	}
	bin := filepath.Join(dir, "webhookd")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/webhookd/webhookd/cmd/webhookd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build webhookd (run from cmd/webhookbench, or pass -webhookd): %v\n%s", err, out)
	}
	return bin, nil
}
