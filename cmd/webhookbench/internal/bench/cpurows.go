package bench

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// cpuRow is one row of the CPU breakdown: a sample belongs to the first
// row one of whose parts is in a function name on its stack, anywhere.
type cpuRow struct {
	name  string
	parts []string
}

// cpuRows are the breakdown's rows, most specific first: a claim made
// from the handler counts as the store's, a log line as logging's, and
// only what no row above claims as the handler's own or net/http's.
var cpuRows = []cpuRow{
	{"store writer: LMDB commit and its ops (cgo, pwrite, fdatasync)", []string{"dedupe/lmdb.(*Store).writeLoop"}},
	{"store writer: Postgres batch (pgx)", []string{"dedupe/postgres.(*Store).writeLoop"}},
	{"store callers: claim, answer, peek (read txn, queueing)", []string{"webhookd/webhookd/dedupe/", "receiver.boundedStore", "receiver.(*boundedStore)"}},
	{"forward: retryablehttp + net/http client", []string{"dispatch.(*Forwarder).Forward", "net/http.(*persistConn)", "net/http.(*Transport)", "httputil.(*ReverseProxy)"}},
	{"verifier (HMAC, signature header)", []string{").Verify"}},
	{"parser (event key, fingerprint)", []string{"receiver.parse"}},
	{"logging (slog, logbuf)", []string{"log/slog.", "internal/logbuf."}},
	{"metrics", []string{"webhookd/webhookd/metrics."}},
	{"overview counters", []string{"webhookd/webhookd/overview."}},
	{"request log", []string{"webhookd/webhookd/requestlog."}},
	{"request body read", []string{"receiver.(*pendingBody)", "receiver.readBody"}},
	{"queue delivery loop", []string{"webhookd/webhookd/deliver."}},
	{"rest of the handler", []string{"webhookd/webhookd/receiver.", "go-chi/chi/"}},
	{"net/http server (read request, write reply)", []string{"net/http.(*conn).serve", "net/http.(*response)", "net/http.(*connReader)"}},
	{"GC (background)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
	{"scheduler, netpoll, other runtime", []string{"runtime."}},
}

// otherRow is where a sample no row claims goes.
const otherRow = "other"

// cpuBreakdown sums a CPU profile's samples by row.
func cpuBreakdown(path string) (map[string]time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, fmt.Errorf("%s: not a CPU profile", path)
	}
	rows := make(map[string]time.Duration)
	for _, s := range p.Sample {
		rows[rowOf(s)] += time.Duration(s.Value[cpu])
	}
	return rows, nil
}

// rowOf is the row a sample's stack belongs to.
func rowOf(s *profile.Sample) string {
	var funcs []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				funcs = append(funcs, l.Function.Name)
			}
		}
	}
	for _, r := range cpuRows {
		for _, f := range funcs {
			for _, part := range r.parts {
				if strings.Contains(f, part) {
					return r.name
				}
			}
		}
	}
	return otherRow
}

// breakdownTable is the CPU per delivery of each profiled design, row by
// row: its profiles' samples summed over the rounds, over the deliveries
// answered in those rounds.
func breakdownTable(sums []*variantSummary) string {
	var cols []*variantSummary
	for _, s := range sums {
		for _, r := range s.runs {
			if r.cpuRows != nil {
				cols = append(cols, s)
				break
			}
		}
	}
	if len(cols) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nWhere a delivery's CPU goes in the profiled process (µs per delivery, share; CPU profiles summed over the rounds):\n\n| where |")
	for _, s := range cols {
		fmt.Fprintf(&b, " %s |", label(s.variant))
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(cols)) + "\n")
	type col struct {
		rows       map[string]time.Duration
		total      time.Duration
		deliveries int
	}
	cs := make([]col, len(cols))
	for i, s := range cols {
		cs[i].rows = make(map[string]time.Duration)
		for _, r := range s.runs {
			if r.cpuRows == nil {
				continue // not profiled: its deliveries have no samples
			}
			for k, d := range r.cpuRows {
				cs[i].rows[k] += d
				cs[i].total += d
			}
			cs[i].deliveries += r.deliveries
		}
	}
	names := make([]string, 0, len(cpuRows)+1)
	for _, r := range cpuRows {
		names = append(names, r.name)
	}
	for _, name := range append(names, otherRow) {
		line, shown := fmt.Sprintf("| %s |", name), false
		for _, c := range cs {
			d := c.rows[name]
			if d == 0 || c.deliveries == 0 {
				line += " — |"
				continue
			}
			shown = true
			line += fmt.Sprintf(" %.0f (%.0f %%) |", float64(d.Microseconds())/float64(c.deliveries), 100*float64(d)/float64(c.total))
		}
		if shown {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("| **total, µs per delivery** |")
	for _, c := range cs {
		fmt.Fprintf(&b, " **%.0f** |", float64(c.total.Microseconds())/float64(max(c.deliveries, 1)))
	}
	b.WriteString("\n")
	return b.String()
}
