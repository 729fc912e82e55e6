package overview_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/receiver"
)

// TestStateNowLooksAtFiveMinutes: the board's state is the last five
// minutes' (docs/contract.md), so a gateway that recovered is delivering
// again while the window still counts its failures.
func TestStateNowLooksAtFiveMinutes(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe", "xendit", "paddle", "adyen"}, c.now)
	unavailable := receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnavailable,
		Dispatch: &dispatch.Result{Outcome: dispatch.Unavailable, Status: 503, Duration: time.Second}}
	rec.Observe(unavailable)
	rec.Observe(forwarded("stripe", time.Millisecond))
	rec.Observe(receiver.Delivery{Provider: "xendit", Outcome: receiver.OutcomeUnauthorized, Reason: "signature_invalid"})
	rec.Observe(forwarded("xendit", time.Millisecond))
	rec.Observe(forwarded("paddle", time.Millisecond))
	rec.Observe(receiver.Delivery{Provider: "adyen", Outcome: receiver.OutcomeCoreRejected,
		Dispatch: &dispatch.Result{Outcome: dispatch.Rejected, Status: 422, Duration: time.Second}})

	sum := rec.Summary(overview.DefaultWindow)
	for p, want := range map[string]string{"stripe": "failing", "xendit": "refusing", "paddle": "delivering", "adyen": "failing"} {
		require.Equal(t, want, find(t, sum, p).Now.State, p)
	}

	c.add(5 * time.Minute)
	rec.Observe(forwarded("stripe", time.Millisecond))
	sum = rec.Summary(overview.DefaultWindow)
	stripe := find(t, sum, "stripe")
	require.Equal(t, "delivering", stripe.Now.State, "recovered: the failure is older than five minutes")
	require.Equal(t, uint64(1), stripe.Outcomes["unavailable"], "the window still counts it")
	require.Equal(t, "idle", find(t, sum, "paddle").Now.State)
}

// TestRefusalsApartFromCoreRejections: the board counts webhookd's
// refusals by reason, and the core's rejections on their own.
func TestRefusalsApartFromCoreRejections(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe"}, c.now)
	for _, r := range []string{"signature_invalid", "signature_invalid", "timestamp_outside_tolerance"} {
		rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnauthorized, Reason: r})
	}
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeMismatch, Reason: "payload_mismatch"})
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeCoreRejected,
		Dispatch: &dispatch.Result{Outcome: dispatch.Rejected, Status: 422, Duration: time.Second}})
	ps := find(t, rec.Summary(overview.DefaultWindow), "stripe")
	require.Equal(t, map[string]uint64{"signature_invalid": 2, "timestamp_outside_tolerance": 1, "payload_mismatch": 1}, ps.Refusals)
	require.Equal(t, uint64(4), ps.Refused)
	require.Equal(t, uint64(1), ps.CoreRejected)
	legend := string(overview.Legend())
	require.Contains(t, legend, "refused by webhookd")
	require.Contains(t, legend, "rejected by the core")
}

// TestAnswersNeverExceedReached: a core that answers 503 after the retries
// did not take the event; the latency's answers are those that reached the
// core, so "reached 0 of 4" never sits beside "4 answers".
func TestAnswersNeverExceedReached(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"cashfree"}, c.now)
	for range 4 {
		rec.Observe(receiver.Delivery{Provider: "cashfree", Outcome: receiver.OutcomeUnavailable,
			Dispatch: &dispatch.Result{Outcome: dispatch.Unavailable, Status: 503, Duration: 375 * time.Millisecond}})
	}
	ps := find(t, rec.Summary(overview.DefaultWindow), "cashfree")
	require.Equal(t, uint64(0), ps.Core.Reached)
	require.Equal(t, uint64(4), ps.Core.Attempted)
	require.Equal(t, uint64(0), ps.CoreLatency.Count, "no answer counted that did not reach the core")
}

func TestSparklineSaysItsTotal(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe"}, c.now)
	rec.Observe(forwarded("stripe", time.Millisecond))
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnauthorized, Reason: "signature_missing"})
	svg := string(overview.Sparkline(find(t, rec.Summary(overview.DefaultWindow), "stripe"), overview.DefaultWindow))
	require.True(t, strings.HasPrefix(svg, `<svg class="spark"`))
	require.Contains(t, svg, "stripe: 2 deliveries over the last hour")
	require.Contains(t, svg, `class="good"`)
	require.Contains(t, svg, `class="bad"`)
	require.NotContains(t, svg, "<script")
}
