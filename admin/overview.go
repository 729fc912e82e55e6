package admin

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/overview"
)

// summary builds the overview of the window ?window= names: the
// Recorder's deliveries and the store's FAILED records. A store that cannot
// be read leaves the FAILED figures out and says why in failedErr, rather
// than hiding the deliveries too.
func (h *handler) summary(ctx context.Context, r *http.Request) (sum overview.Summary, w overview.Window, failedErr error, err error) {
	w, err = overview.ParseWindow(r.URL.Query().Get("window"))
	if err != nil {
		return sum, w, nil, err
	}
	sum = h.Overview.Summary(w)
	if qerr := h.addQueues(ctx, &sum); qerr != nil {
		h.Logger.Warn("admin: reading the queues failed", "error", qerr.Error())
		return sum, w, qerr, nil
	}
	counts, ferr := h.failed.Count(ctx)
	if ferr != nil {
		h.Logger.Warn("admin: counting FAILED records failed", "error", ferr.Error())
		return sum, w, ferr, nil
	}
	overview.AddFailed(&sum, counts)
	return sum, w, nil, nil
}

// addQueues puts into sum the depth and oldest of the queue destinations
// each source's routes reach, read once per destination (QueueCounter).
func (h *handler) addQueues(ctx context.Context, sum *overview.Summary) error {
	if h.queues == nil || h.Destinations == nil {
		return nil
	}
	queuesOf := map[string][]string{}
	var names []string
	for _, d := range h.Destinations() {
		if d.Delivery != "queue" {
			continue
		}
		names = append(names, d.Name)
		for _, s := range d.Sources {
			queuesOf[s] = append(queuesOf[s], d.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	figs, err := h.queues.Read(ctx, names)
	if err != nil {
		return err
	}
	overview.AddQueues(sum, queuesOf, figs)
	return nil
}

// apiSummary answers GET /api/summary?window=15m|1h|24h.
func (h *handler) apiSummary(w http.ResponseWriter, r *http.Request) {
	sum, _, failedErr, err := h.summary(r.Context(), r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if failedErr != nil {
		writeError(w, statusOf(failedErr), publicError(failedErr))
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

// overviewPage is the data of web/overview.html.
type overviewPage struct {
	page
	Window  overview.Window
	Windows []windowLink
	Cards   []card
	// Board is the table that opens the page: every source in one row.
	Board  []boardRow
	Defs   template.HTML
	Legend template.HTML
	// Outcomes are the table's columns: the outcomes any provider had.
	Outcomes []string
	Since    string
}

type windowLink struct {
	Name, Label, Href string
	Current           bool
}

// boardRow is one source's row of the board (docs/contract.md, the
// overview board): its state now, then its window.
type boardRow struct {
	Source, State, StateDetail string
	Spark                      template.HTML
	Total                      uint64
	Share, ShareDetail         string
	Refusals                   []reasonCount
	Refused, CoreRejected      uint64
	Failed, FailedDetail       string
	FailedBad                  bool
	CardHref, ListHref         string
	FailedHref, RequestsHref   string
	// Destinations are the source's destinations: each one's share
	// delivered and, for a queue destination, its depth and oldest.
	Destinations []destCell
}

// destCell is one destination on a source's board row.
type destCell struct {
	Name, Share, ShareDetail string
	// Queue is "" for a sync destination, else the depth and the age of
	// the oldest waiting event; QueueBad while any waits.
	Queue, QueueDetail string
	QueueBad           bool
	ListHref           string
}

// reasonCount is one reason's refusals in the window, linked to the
// request log's entries of it.
type reasonCount struct {
	Reason string
	N      uint64
	Href   string
}

// card is one provider's part of the page: its figures as text, its chart.
type card struct {
	Provider                string
	Total                   uint64
	Share, ShareDetail      string
	P50, P99, LatencyDetail string
	Failed, FailedDetail    string
	FailedBad               bool
	ShareBad                bool
	Chart                   template.HTML
	ListHref, FailedHref    string
	Counts                  []uint64 // by overviewPage.Outcomes
	// State is the source's state now; Failing makes the window's share
	// tile red only while it lasts.
	State, StateDetail    string
	Refused, CoreRejected uint64
	RefusalsDetail        string
}

// consoleOverview answers GET /overview.
func (h *handler) consoleOverview(w http.ResponseWriter, r *http.Request) {
	data := overviewPage{page: h.basePage(r, "Overview"), Defs: overview.Defs(), Legend: overview.Legend()}
	sum, win, failedErr, err := h.summary(r.Context(), r)
	if err != nil {
		data.Error = err.Error()
		win = overview.DefaultWindow
		sum = h.Overview.Summary(win)
	}
	if failedErr != nil {
		data.Error = "The store's FAILED records or queues could not be read: " + publicError(failedErr)
	}
	data.Window = win
	data.Since = sum.From.Format("15:04") + " UTC"
	for _, o := range overview.Windows {
		data.Windows = append(data.Windows, windowLink{Name: o.Name, Label: o.Label, Href: "/overview?window=" + o.Name, Current: o.Name == win.Name})
	}
	data.Outcomes = shownOutcomes(sum)
	now := h.Now()
	for _, ps := range sum.Providers {
		c := card{
			Provider: ps.Provider, Total: ps.Total, Chart: overview.Chart(ps, win),
			ListHref:   "/?provider=" + url.QueryEscape(ps.Provider),
			FailedHref: "/?provider=" + url.QueryEscape(ps.Provider) + "&state=FAILED",
			Share:      "–", ShareDetail: "nothing had to reach it",
			P50: "–", P99: "–", LatencyDetail: "no answer from the core",
			Failed: "–", FailedDetail: "not counted",
		}
		c.State, c.StateDetail = ps.Now.State, nowDetail(ps.Now)
		c.Refused, c.CoreRejected = ps.Refused, ps.CoreRejected
		if s := ps.Core.Share; s != nil {
			c.Share = percent(*s)
			c.ShareDetail = fmt.Sprintf("%d of %d reached it", ps.Core.Reached, ps.Core.Attempted)
			// Red only while deliveries still fail: a gateway that
			// recovered is not red for the rest of the window.
			c.ShareBad = *s < 0.99 && ps.Now.State == overview.StateFailing
		}
		if l := ps.CoreLatency; l.Count > 0 {
			c.P50, c.P99 = millis(*l.P50), millis(*l.P99)
			c.LatencyDetail = fmt.Sprintf("of the %d that reached it", l.Count)
		}
		reasons := sortedReasons(ps.Refusals)
		c.RefusalsDetail = "none"
		if len(reasons) > 0 {
			parts := make([]string, len(reasons))
			for i, rc := range reasons {
				parts[i] = fmt.Sprintf("%s %d", rc.Reason, rc.N)
			}
			c.RefusalsDetail = strings.Join(parts, ", ")
		}
		if f := ps.Failed; f != nil {
			c.Failed = strconv.FormatUint(f.Waiting, 10)
			if f.AtLeast {
				c.Failed = "≥ " + c.Failed
			}
			c.FailedDetail = "none waiting"
			if f.Oldest != nil {
				c.FailedDetail = "oldest " + age(now, *f.Oldest)
				c.FailedBad = true
			}
		}
		for _, o := range data.Outcomes {
			c.Counts = append(c.Counts, ps.Outcomes[o])
		}
		data.Cards = append(data.Cards, c)
		row := boardRow{
			Source: ps.Source, State: c.State, StateDetail: c.StateDetail, Spark: overview.Sparkline(ps, win),
			Total: ps.Total, Share: c.Share, ShareDetail: c.ShareDetail, Refused: ps.Refused, CoreRejected: ps.CoreRejected,
			Failed: c.Failed, FailedDetail: c.FailedDetail, FailedBad: c.FailedBad,
			CardHref: "#provider-" + ps.Provider, ListHref: c.ListHref, FailedHref: c.FailedHref,
			RequestsHref: "/requests?source=" + url.QueryEscape(ps.Source),
		}
		if ps.Source == overview.UnknownProvider {
			// The log keeps the name each such request asked for.
			row.RequestsHref = "/requests?outcome=not_found"
		}
		for _, rc := range reasons {
			rc.Href = row.RequestsHref + "&reason=" + url.QueryEscape(rc.Reason)
			row.Refusals = append(row.Refusals, rc)
		}
		for _, ds := range ps.Destinations {
			row.Destinations = append(row.Destinations, newDestCell(ps.Source, ds, now))
		}
		data.Board = append(data.Board, row)
	}
	status := http.StatusOK
	if err != nil {
		status = http.StatusBadRequest
	}
	h.render(w, status, h.pages.overview, data)
}

// newDestCell is source's figures for one destination.
func newDestCell(source string, ds overview.DestinationSummary, now time.Time) destCell {
	c := destCell{Name: ds.Destination, Share: "–", ShareDetail: "nothing had to reach it in the window",
		ListHref: "/?provider=" + url.QueryEscape(source) + "&destination=" + url.QueryEscape(ds.Destination)}
	if s := ds.Delivered.Share; s != nil {
		c.Share = percent(*s)
		c.ShareDetail = fmt.Sprintf("%d of %d reached it", ds.Delivered.Reached, ds.Delivered.Attempted)
	} else if ds.Queued > 0 {
		// Queued events are the delivery loop's to deliver: its queue says
		// how far it is.
		c.Share = ""
	}
	if q := ds.Queue; q != nil {
		c.Queue, c.QueueDetail = fmt.Sprintf("%d queued", q.Depth), "none waiting"
		if q.Oldest != nil {
			c.Queue += ", oldest " + strings.TrimSuffix(age(now, *q.Oldest), " ago")
			c.QueueDetail = "oldest queued at " + q.Oldest.Format(time.RFC3339)
			c.QueueBad = true
		}
	}
	return c
}

// nowDetail says what the state now counts.
func nowDetail(n overview.Now) string {
	switch n.State {
	case overview.StateFailing:
		return fmt.Sprintf("%d not delivered in the last 5 min", n.Failing)
	case overview.StateRefusing:
		return fmt.Sprintf("%d refused in the last 5 min", n.Refused)
	case overview.StateDelivering:
		return fmt.Sprintf("%d delivered in the last 5 min", n.Delivered)
	}
	return "nothing in the last 5 min"
}

// sortedReasons lists a window's refusals, the most frequent first.
func sortedReasons(m map[string]uint64) []reasonCount {
	out := make([]reasonCount, 0, len(m))
	for r, n := range m {
		out = append(out, reasonCount{Reason: r, N: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// shownOutcomes are the outcomes the table has a column for: forwarded
// always, the others when some provider had one in the window.
func shownOutcomes(sum overview.Summary) []string {
	var out []string
	for _, o := range overviewOutcomes() {
		if o == "forwarded" {
			out = append(out, o)
			continue
		}
		for _, ps := range sum.Providers {
			if ps.Outcomes[o] > 0 {
				out = append(out, o)
				break
			}
		}
	}
	return out
}

func overviewOutcomes() []string {
	var out []string
	for _, g := range overview.Groups {
		for _, o := range g.Outcomes {
			out = append(out, o.String())
		}
	}
	return append(out, "batch")
}

// percent shows a share; one short of all is never rounded up to 100%.
func percent(f float64) string {
	if f >= 1 {
		return "100%"
	}
	return strconv.FormatFloat(min(f*100, 99.9), 'f', 1, 64) + "%"
}

func millis(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d < time.Second {
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'f', 1, 64) + " s"
}
