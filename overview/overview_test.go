package overview_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/receiver"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func forwarded(provider string, core time.Duration) receiver.Delivery {
	return receiver.Delivery{Provider: provider, Outcome: receiver.OutcomeForwarded,
		Dispatch: &dispatch.Result{Outcome: dispatch.Delivered, Status: 200, Duration: core}}
}

func find(t *testing.T, sum overview.Summary, provider string) overview.ProviderSummary {
	t.Helper()
	for _, ps := range sum.Providers {
		if ps.Provider == provider {
			return ps
		}
	}
	t.Fatalf("no %s in %+v", provider, sum.Providers)
	return overview.ProviderSummary{}
}

func TestSummaryCountsByOutcome(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe", "xendit"}, c.now)
	for range 8 {
		rec.Observe(forwarded("stripe", 40*time.Millisecond))
	}
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeReplayed})
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnauthorized})
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnavailable,
		Dispatch: &dispatch.Result{Outcome: dispatch.Unavailable, Duration: 3 * time.Second}})
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeCoreRejected,
		Dispatch: &dispatch.Result{Outcome: dispatch.Rejected, Status: 422, Duration: 2 * time.Second}})
	rec.Observe(receiver.Delivery{Provider: "nosuch", Outcome: receiver.OutcomeNotFound})

	sum := rec.Summary(overview.DefaultWindow)
	require.Equal(t, "1h", sum.Window)
	names := []string{}
	for _, ps := range sum.Providers {
		names = append(names, ps.Provider)
	}
	require.Equal(t, []string{"stripe", "xendit", overview.UnknownProvider}, names, "an unknown route is bounded to one row")

	s := find(t, sum, "stripe")
	for _, o := range receiver.Outcomes() {
		require.Contains(t, s.Outcomes, o.String(), "every outcome label is present")
	}
	require.EqualValues(t, 8, s.Outcomes["forwarded"])
	require.EqualValues(t, 1, s.Outcomes["core_rejected"])
	require.EqualValues(t, 12, s.Total)
	require.EqualValues(t, 9, s.Core.Reached, "forwarded and core_rejected reached the core")
	require.EqualValues(t, 10, s.Core.Attempted, "unavailable did not")
	require.InDelta(t, 0.9, *s.Core.Share, 1e-9)
	require.EqualValues(t, 9, s.CoreLatency.Count, "only answers the core gave are timed")
	require.InDelta(t, 0.025+0.025*(4.5/8), *s.CoreLatency.P50, 1e-9, "inside the 25-50 ms bucket")
	require.InDelta(t, 2.5, *s.CoreLatency.P99, 0.3)
	require.Len(t, s.Series, 30)
	require.EqualValues(t, 8, s.Series[29].Outcomes["forwarded"], "the last step holds the current minute")

	x := find(t, sum, "xendit")
	require.Zero(t, x.Total)
	require.Nil(t, x.Core.Share)
	require.Nil(t, x.CoreLatency.P50)
}

func TestSummaryWindowsAndRing(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe"}, c.now)
	rec.Observe(forwarded("stripe", time.Millisecond)) // 03:00
	c.add(20 * time.Minute)
	rec.Observe(forwarded("stripe", time.Millisecond)) // 03:20
	c.add(10 * time.Minute)                            // now 03:30

	for _, tc := range []struct {
		window string
		want   uint64
		steps  int
	}{
		{"15m", 1, 15}, // 03:16 to 03:30
		{"1h", 2, 30},
		{"24h", 2, 48},
	} {
		w, err := overview.ParseWindow(tc.window)
		require.NoError(t, err)
		s := find(t, rec.Summary(w), "stripe")
		require.Equal(t, tc.want, s.Total, tc.window)
		require.Len(t, s.Series, tc.steps, tc.window)
	}

	// A day later the ring's slots hold other minutes: the old counts are
	// gone, not added to the new ones.
	c.add(24 * time.Hour)
	rec.Observe(forwarded("stripe", time.Millisecond))
	w, _ := overview.ParseWindow("24h")
	require.EqualValues(t, 1, find(t, rec.Summary(w), "stripe").Total)

	_, err := overview.ParseWindow("2h")
	require.ErrorIs(t, err, overview.ErrUnknownWindow)
}

// listing is a store holding FAILED records, newest first.
type listing struct{ recs []dedupe.Record }

func (l listing) Recent(_ context.Context, o dedupe.RecentOptions) ([]dedupe.Record, string, error) {
	start := 0
	if o.Cursor != "" {
		fmt.Sscan(o.Cursor, &start)
	}
	end := min(start+o.PageLimit(), len(l.recs))
	next := ""
	if end < len(l.recs) {
		next = fmt.Sprint(end)
	}
	return l.recs[start:end], next, nil
}

func TestFailedCounter(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var recs []dedupe.Record
	for i := 2500; i > 0; i-- { // newest first
		p := "stripe"
		if i%5 == 0 {
			p = "xendit"
		}
		recs = append(recs, dedupe.Record{Key: fmt.Sprintf("%s:evt_%d", p, i), State: dedupe.Failed, CreatedAt: base.Add(time.Duration(i) * time.Second)})
	}
	fc := &overview.FailedCounter{Store: listing{recs}}
	counts, err := fc.Count(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 2000, counts["stripe"].Waiting)
	require.EqualValues(t, 500, counts["xendit"].Waiting)
	require.Equal(t, "stripe:evt_1", counts["stripe"].OldestKey)
	require.Equal(t, base.Add(5*time.Second), *counts["xendit"].Oldest)
	require.False(t, counts["stripe"].AtLeast)

	rec := overview.NewRecorder([]string{"stripe", "paypal"}, nil)
	sum := rec.Summary(overview.DefaultWindow)
	overview.AddFailed(&sum, counts)
	require.EqualValues(t, 2000, find(t, sum, "stripe").Failed.Waiting)
	require.Zero(t, find(t, sum, "paypal").Failed.Waiting)
}

func TestChartSaysItInWords(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe"}, c.now)
	rec.Observe(forwarded("stripe", time.Millisecond))
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnavailable})
	w, _ := overview.ParseWindow("15m")
	svg := string(overview.Chart(find(t, rec.Summary(w), "stripe"), w))
	require.Contains(t, svg, `role="img"`)
	require.Contains(t, svg, "<title id=\"chart-stripe-t\">stripe: deliveries per minute over the last 15 minutes</title>")
	require.Contains(t, svg, "2 deliveries: 1 forwarded, 0 replayed, 0 refused by webhookd, 0 rejected by the core, 1 unavailable.")
	require.Contains(t, svg, "<title>03:00–03:01 UTC: 1 forwarded, 1 unavailable</title>")
	require.Equal(t, 1, strings.Count(svg, `fill="url(#p-unavailable)"`))
}
