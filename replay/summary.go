package replay

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteSummary prints the report: one line per fixture with the answers it
// got, then one line per status code (transport failures as "error") with
// how many answers were replayed from the store and the latencies (min,
// median, p95, max), then a total.
func (r *Report) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIXTURE\tPROVIDER\tANSWERS")
	perFixture := make([][]Result, len(r.Fixtures))
	for _, res := range r.Results {
		perFixture[res.Fixture] = append(perFixture[res.Fixture], res)
	}
	for i, f := range r.Fixtures {
		a := answers(perFixture[i], r.Repeat)
		if why, skipped := r.Skipped[i]; skipped {
			a = "skipped (" + why + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Path, f.Provider, a)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	fmt.Fprintln(tw, "STATUS\tCOUNT\tREPLAYED\tMIN\tMEDIAN\tP95\tMAX")
	for _, g := range byStatus(r.Results) {
		lat := latencies(g.results)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", g.label, len(g.results), g.replayed,
			ms(lat[0]), ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(lat[len(lat)-1]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	failed := 0
	for _, res := range r.Results {
		if !res.OK() {
			failed++
		}
	}
	line := fmt.Sprintf("%s (%s x %d, %d at a time) in %s: %d OK (2xx or 409), %d failed",
		plural(len(r.Results), "request"), plural(len(r.Fixtures), "fixture"), r.Repeat, r.Concurrency,
		ms(r.Elapsed), len(r.Results)-failed, failed)
	if n := len(r.Skipped); n > 0 {
		line += fmt.Sprintf("; %s skipped", plural(n, "fixture"))
	}
	if missing := r.Planned - len(r.Results); missing > 0 {
		line += fmt.Sprintf("; interrupted, %d not sent", missing)
	}
	_, err := fmt.Fprintln(w, "\n"+line)
	return err
}

// answers describes one fixture's results: "201", "201 replayed",
// "401 (message)", "error (dial tcp ...)", with " xN" counts when the
// fixture was sent more than once.
func answers(rs []Result, repeat int) string {
	if len(rs) == 0 {
		return "not sent"
	}
	counts := map[string]int{}
	var labels []string
	for _, res := range rs {
		l := answerLabel(res)
		if counts[l] == 0 {
			labels = append(labels, l)
		}
		counts[l]++
	}
	sort.Strings(labels)
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = l
		if repeat > 1 {
			parts[i] += " x" + strconv.Itoa(counts[l])
		}
	}
	return strings.Join(parts, ", ")
}

func answerLabel(res Result) string {
	switch {
	case res.Err != nil && res.Status == 0:
		return "error (" + res.Err.Error() + ")"
	case res.Err != nil:
		return strconv.Itoa(res.Status) + " (" + res.Err.Error() + ")"
	case res.Replayed:
		return strconv.Itoa(res.Status) + " replayed"
	case res.Message != "":
		return strconv.Itoa(res.Status) + " (" + res.Message + ")"
	}
	return strconv.Itoa(res.Status)
}

type statusGroup struct {
	label    string
	status   int
	results  []Result
	replayed int
}

// byStatus groups results by status code, in code order, transport
// failures ("error") last.
func byStatus(rs []Result) []statusGroup {
	groups := map[int]*statusGroup{}
	for _, res := range rs {
		g := groups[res.Status]
		if g == nil {
			label := strconv.Itoa(res.Status)
			if res.Status == 0 {
				label = "error"
			}
			g = &statusGroup{label: label, status: res.Status}
			groups[res.Status] = g
		}
		g.results = append(g.results, res)
		if res.Replayed {
			g.replayed++
		}
	}
	out := make([]statusGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].status, out[j].status
		if a == 0 || b == 0 {
			return b == 0 && a != 0
		}
		return a < b
	})
	return out
}

// percentile returns the p-th percentile of sorted by the nearest-rank
// method: the smallest value with at least p% of the values at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n)
	return sorted[max(rank, 1)-1]
}

// ms formats d in milliseconds with a tenth of precision ("12.3ms").
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
