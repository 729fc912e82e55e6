package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// traceSeconds is how much of each timed run compare -trace records.
const traceSeconds = 2

// defaultWriter is the function of the LMDB store's writer goroutine.
const defaultWriter = "dedupe/lmdb.(*Store).writeLoop"

// What a goroutine's time is spent on, beside waiting (classify).
const (
	schedRunning  = "running"
	schedRunnable = "runnable (waiting for a processor)"
	schedSyscall  = "in a system call or cgo"
)

// schedReport is where the time of two kinds of goroutine went in one
// execution trace: the HTTP server's (one per connection, the handlers
// run on them) and the store writer's.
type schedReport struct {
	span     time.Duration
	handlers map[string]time.Duration
	// writer is empty when no goroutine ran the writer's function.
	writer map[string]time.Duration
	// wakes are the writer's waits from runnable to running.
	wakes []time.Duration
}

// goSched is what readSched keeps of one goroutine.
type goSched struct {
	state   trace.GoState
	since   trace.Time
	waiting string // what it waits for, once it blocked
	handler bool   // seen running net/http's connection loop
	writer  bool   // seen running the writer's function
}

// readSched reads an execution trace (runtime/trace, /debug/pprof/trace).
// A goroutine's time counts from the first time it stops running with the
// HTTP server's connection loop (or writerFunc) on its stack.
func readSched(r io.Reader, writerFunc string) (*schedReport, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	rep := &schedReport{handlers: map[string]time.Duration{}, writer: map[string]time.Duration{}}
	gs := map[trace.GoID]*goSched{}
	var first, last trace.Time
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		id := st.Resource.Goroutine()
		from, to := st.Goroutine()
		g := gs[id]
		if g == nil {
			g = &goSched{state: from, since: first}
			gs[id] = g
		}
		var funcs []string
		if from == trace.GoRunning {
			for f := range st.Stack.Frames() {
				funcs = append(funcs, f.Func)
			}
			g.handler = g.handler || slices.Contains(funcs, "net/http.(*conn).serve")
			g.writer = g.writer || slices.ContainsFunc(funcs, func(f string) bool { return strings.HasSuffix(f, writerFunc) })
		}
		if d := time.Duration(ev.Time() - g.since); g.handler || g.writer {
			what := stateName(g.state, g.waiting)
			if g.handler {
				rep.handlers[what] += d
			}
			if g.writer {
				if g.state == trace.GoWaiting {
					what = "waiting: its queue (the next op, or the gather's timer)"
				}
				rep.writer[what] += d
				if g.state == trace.GoRunnable && to == trace.GoRunning {
					rep.wakes = append(rep.wakes, d)
				}
			}
		}
		if to == trace.GoWaiting {
			g.waiting = classify(funcs)
		}
		g.state, g.since = to, ev.Time()
	}
	rep.span = time.Duration(last - first)
	slices.Sort(rep.wakes)
	return rep, nil
}

func stateName(s trace.GoState, waiting string) string {
	switch s {
	case trace.GoRunning:
		return schedRunning
	case trace.GoRunnable:
		return schedRunnable
	case trace.GoSyscall:
		return schedSyscall
	case trace.GoWaiting:
		return "waiting: " + waiting
	}
	return s.String()
}

// classify names what a goroutine blocked with the stack funcs (innermost
// first) waits for.
func classify(funcs []string) string {
	has := func(part string) bool {
		return slices.ContainsFunc(funcs, func(f string) bool { return strings.Contains(f, part) })
	}
	switch {
	case has("webhookd/webhookd/dedupe/"):
		if has(".Claim") || has(".Enqueue") {
			return "the store (a claim or an enqueue)"
		}
		return "the store (an answer, a release or a read)"
	case has("dispatch.(*Forwarder).Forward"), has("httputil.(*ReverseProxy)"):
		return "the core's answer to a forward"
	case has("net/http.(*conn).readRequest"), has("net/http.(*conn).serve") && !has("ServeHTTP"):
		return "the client's next request"
	case len(funcs) > 0:
		return "other (" + funcs[0] + ")"
	}
	return "other"
}

// quantileOf is the q-quantile of sorted ds (nearest rank).
func quantileOf(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(max(int(q*float64(len(ds))+0.5)-1, 0), len(ds)-1)]
}

// write prints rep as two tables, each state's time and its share.
func (rep *schedReport) write(w io.Writer, name string) {
	fmt.Fprintf(w, "%s: %.2f s traced\n\n", name, rep.span.Seconds())
	table := func(title string, m map[string]time.Duration) {
		var total time.Duration
		keys := make([]string, 0, len(m))
		for k, d := range m {
			keys = append(keys, k)
			total += d
		}
		slices.SortFunc(keys, func(a, b string) int { return int(m[b] - m[a]) })
		fmt.Fprintf(w, "| %s | goroutine-seconds | share |\n| --- | ---: | ---: |\n", title)
		for _, k := range keys {
			fmt.Fprintf(w, "| %s | %.3f | %.1f %% |\n", k, m[k].Seconds(), 100*float64(m[k])/float64(total))
		}
		fmt.Fprintln(w)
	}
	table("HTTP server goroutines", rep.handlers)
	if len(rep.writer) == 0 {
		fmt.Fprintln(w, "no goroutine ran the writer's function")
		return
	}
	table("store writer", rep.writer)
	fmt.Fprintf(w, "writer's waits for a processor: %d, p50 %s, p90 %s, p99 %s\n\n", len(rep.wakes),
		quantileOf(rep.wakes, 0.5), quantileOf(rep.wakes, 0.9), quantileOf(rep.wakes, 0.99))
}

// runSched is the sched command.
func runSched(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sched", flag.ContinueOnError)
	fs.SetOutput(stderr)
	writer := fs.String("writer", defaultWriter, "the store writer goroutine's function (a suffix of its name): dedupe/postgres.(*Store).writeLoop for Postgres's writers")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "webhookbench sched: name one or more execution traces (compare -trace DIR writes them)")
		return 2
	}
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(stderr, "webhookbench:", err)
			return 1
		}
		rep, err := readSched(f, *writer)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "webhookbench: %s: %v\n", path, err)
			return 1
		}
		rep.write(stdout, path)
	}
	return 0
}
