package overview

import (
	"fmt"
	"html"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/receiver"
)

// Group is a set of outcomes the chart draws as one band. Each band has a
// colour and a fill pattern of its own and is named in the legend and in
// every bar's title, so that colour is never the only signal.
type Group struct {
	Name     string
	Pattern  string // the id of its <pattern>
	Colour   string
	Outcomes []receiver.Outcome
}

// Groups are the chart's bands, bottom to top. The batch outcome is in
// none: a request split into items is drawn as its items. webhookd's own
// refusals and the core's rejections are two bands: one is a gateway or a
// sender to look at, the other the core service.
var Groups = []Group{
	{"forwarded", "p-forwarded", "#137a3f", []receiver.Outcome{receiver.OutcomeForwarded}},
	{"replayed", "p-replayed", "#2f5bd3", []receiver.Outcome{receiver.OutcomeReplayed, receiver.OutcomeConflict}},
	{"refused by webhookd", "p-refused", "#a15c00", []receiver.Outcome{
		receiver.OutcomeUnauthorized, receiver.OutcomeBadRequest,
		receiver.OutcomeMismatch, receiver.OutcomeTooLarge, receiver.OutcomeNotFound}},
	{"rejected by the core", "p-core-rejected", "#7a3fa1", []receiver.Outcome{receiver.OutcomeCoreRejected}},
	{"unavailable", "p-unavailable", "#b42318", []receiver.Outcome{receiver.OutcomeUnavailable, receiver.OutcomeError}},
}

// The chart's geometry, in SVG user units (the viewBox; it scales).
const (
	chartW, chartH      = 760, 190
	padLeft, padRight   = 44, 8
	padTop, padBottom   = 10, 26
	plotW               = chartW - padLeft - padRight
	plotH               = chartH - padTop - padBottom
	legendSwatch        = 14
	legendH             = 24
	gridLines           = 4
	clockFormat         = "15:04"
	descGroupsSeparator = ", "
)

// Defs is the <svg> holding the band patterns, once per page: the charts
// refer to them by id. Each pattern is a fill in the band's colour with
// its own texture (solid, diagonal lines, dots, cross-hatch).
func Defs() template.HTML {
	var b strings.Builder
	b.WriteString(`<svg width="0" height="0" aria-hidden="true" focusable="false" style="position:absolute"><defs>`)
	textures := []string{
		``,
		`<path d="M0 8L8 0" stroke="#fff" stroke-width="1.6" stroke-opacity=".75"/>`,
		`<circle cx="4" cy="4" r="1.5" fill="#fff" fill-opacity=".85"/>`,
		`<path d="M0 4H8" stroke="#fff" stroke-width="1.6" stroke-opacity=".8"/>`,
		`<path d="M0 0L8 8M8 0L0 8" stroke="#fff" stroke-width="1.4" stroke-opacity=".8"/>`,
	}
	for i, g := range Groups {
		fmt.Fprintf(&b, `<pattern id="%s" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" height="8" fill="%s"/>%s</pattern>`,
			g.Pattern, g.Colour, textures[i%len(textures)])
	}
	b.WriteString(`</defs></svg>`)
	return template.HTML(b.String())
}

// Legend is the legend of the bands, as text with a swatch of each
// pattern.
func Legend() template.HTML {
	var b strings.Builder
	b.WriteString(`<ul class="legend">`)
	for _, g := range Groups {
		names := make([]string, len(g.Outcomes))
		for i, o := range g.Outcomes {
			names[i] = o.String()
		}
		fmt.Fprintf(&b, `<li><svg width="%d" height="%d" aria-hidden="true"><rect width="%d" height="%d" fill="url(#%s)" stroke="#1c2430" stroke-width=".5"/></svg> <strong>%s</strong> <span class="muted">(%s)</span></li>`,
			legendSwatch, legendSwatch, legendSwatch, legendSwatch, g.Pattern, g.Name, html.EscapeString(strings.Join(names, ", ")))
	}
	b.WriteString(`</ul>`)
	return template.HTML(b.String())
}

// Chart draws ps's series as stacked bars, one per step, with a title and
// a description that say in words what the bars show, and a title on each
// bar with its counts.
func Chart(ps ProviderSummary, w Window) template.HTML {
	id := "chart-" + safeID(ps.Provider)
	per := "per " + stepName(w.Step)
	var totals []uint64
	var peak uint64
	var peakAt time.Time
	groupTotals := make([]uint64, len(Groups))
	for _, pt := range ps.Series {
		var t uint64
		for gi, g := range Groups {
			n := groupCount(pt, g)
			t += n
			groupTotals[gi] += n
		}
		totals = append(totals, t)
		if t > peak {
			peak, peakAt = t, pt.Start
		}
	}
	scale := niceMax(peak)

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t %s-d">`, chartW, chartH, id, id)
	fmt.Fprintf(&b, `<title id="%s-t">%s: deliveries %s over the last %s</title>`, id, html.EscapeString(ps.Provider), per, w.Label)
	fmt.Fprintf(&b, `<desc id="%s-d">%s</desc>`, id, html.EscapeString(describe(ps, groupTotals, peak, peakAt)))

	// Grid and the y axis's figures.
	for i := 0; i <= gridLines; i++ {
		v := scale * uint64(i) / gridLines
		y := padTop + plotH - plotH*i/gridLines
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" class="grid"/>`, padLeft, chartW-padRight, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="axis" text-anchor="end">%d</text>`, padLeft-6, y+4, v)
	}
	n := len(ps.Series)
	if n == 0 {
		b.WriteString(`</svg>`)
		return template.HTML(b.String())
	}
	slot := float64(plotW) / float64(n)
	barW := max(slot*0.78, 1)
	for i, pt := range ps.Series {
		x := float64(padLeft) + slot*float64(i) + (slot-barW)/2
		fmt.Fprintf(&b, `<g><title>%s</title>`, html.EscapeString(barTitle(pt, w, totals[i])))
		y := float64(padTop + plotH)
		for _, g := range Groups {
			c := groupCount(pt, g)
			if c == 0 {
				continue
			}
			h := float64(plotH) * float64(c) / float64(scale)
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#%s)"/>`, x, y, barW, h, g.Pattern)
		}
		// An empty step still has a hit area for its title.
		if totals[i] == 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="transparent"/>`, x, padTop, barW, plotH)
		}
		b.WriteString(`</g>`)
	}
	// The x axis: the first step, the middle one and "now".
	for _, i := range []int{0, n / 2} {
		x := float64(padLeft) + slot*float64(i)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axis">%s</text>`, x, chartH-8, ps.Series[i].Start.Format(clockFormat))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="axis" text-anchor="end">now</text>`, chartW-padRight, chartH-8)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// The sparkline's geometry, in SVG user units.
const sparkW, sparkH = 160, 28

// Sparkline draws ps's traffic over the window as a small bar per step,
// each bar split into what was delivered (forwarded, replayed) and the
// rest, for the board's table: one glance per row, no axes. Its title says
// the window's total in words.
func Sparkline(ps ProviderSummary, w Window) template.HTML {
	var peak uint64
	totals := make([]uint64, len(ps.Series))
	good := make([]uint64, len(ps.Series))
	for i, pt := range ps.Series {
		for gi, g := range Groups {
			n := groupCount(pt, g)
			totals[i] += n
			if gi < 2 {
				good[i] += n
			}
		}
		peak = max(peak, totals[i])
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 %d %d" width="%d" height="%d" role="img"><title>%s</title>`,
		sparkW, sparkH, sparkW, sparkH, html.EscapeString(fmt.Sprintf("%s: %d deliveries over the last %s, peak %d per %s",
			ps.Source, ps.Total, w.Label, peak, stepName(w.Step))))
	fmt.Fprintf(&b, `<line x1="0" x2="%d" y1="%d" y2="%d" class="base"/>`, sparkW, sparkH-1, sparkH-1)
	if n := len(ps.Series); n > 0 && peak > 0 {
		slot := float64(sparkW) / float64(n)
		barW := max(slot-1, 1)
		for i := range ps.Series {
			if totals[i] == 0 {
				continue
			}
			x := slot * float64(i)
			h := float64(sparkH-2) * float64(totals[i]) / float64(peak)
			hg := h * float64(good[i]) / float64(totals[i])
			if bad := h - hg; bad > 0 {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="bad"/>`, x, float64(sparkH-1)-h, barW, bad)
			}
			if hg > 0 {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="good"/>`, x, float64(sparkH-1)-hg, barW, hg)
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// describe is the chart's description: the window's figures in a sentence.
func describe(ps ProviderSummary, groupTotals []uint64, peak uint64, peakAt time.Time) string {
	var sum uint64
	parts := make([]string, 0, len(Groups))
	for gi, g := range Groups {
		sum += groupTotals[gi]
		parts = append(parts, fmt.Sprintf("%d %s", groupTotals[gi], g.Name))
	}
	if sum == 0 {
		return "No deliveries in this window."
	}
	return fmt.Sprintf("%d deliveries: %s. Busiest step: %d deliveries from %s UTC.",
		sum, strings.Join(parts, descGroupsSeparator), peak, peakAt.Format(clockFormat))
}

// barTitle is what a bar's title says: its time span and each band's count.
func barTitle(pt Point, w Window, total uint64) string {
	span := pt.Start.Format(clockFormat) + "–" + pt.Start.Add(w.Step).Format(clockFormat) + " UTC"
	if total == 0 {
		return span + ": no deliveries"
	}
	parts := []string{}
	for _, g := range Groups {
		if c := groupCount(pt, g); c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, g.Name))
		}
	}
	return span + ": " + strings.Join(parts, ", ")
}

func groupCount(pt Point, g Group) uint64 {
	var n uint64
	for _, o := range g.Outcomes {
		n += pt.Outcomes[o.String()]
	}
	return n
}

// niceMax is the y axis's top: gridLines grid steps, each step 1, 2 or 5
// times a power of ten, so that the grid's figures are whole and round.
func niceMax(peak uint64) uint64 {
	need := max((peak+gridLines-1)/gridLines, 1)
	for p := uint64(1); ; p *= 10 {
		for _, m := range []uint64{1, 2, 5} {
			if m*p >= need {
				return m * p * gridLines
			}
		}
	}
}

func stepName(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "minute"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " minutes"
	}
	return strconv.Itoa(int(d.Hours())) + " hours"
}

// safeID keeps a provider's name fit for an id attribute.
func safeID(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
