package overview_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/receiver"
)

// TestRecorderGroupsBySource: a delivery counts under its source (its
// provider's name when it names none), and a source a reload adds counts
// from then on.
func TestRecorderGroupsBySource(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe-eu"}, c.now)
	rec.Observe(receiver.Delivery{Source: "stripe-eu", Provider: "stripe", Outcome: receiver.OutcomeForwarded})
	rec.Observe(receiver.Delivery{Source: "stripe-us", Provider: "stripe", Outcome: receiver.OutcomeForwarded})
	require.EqualValues(t, 1, find(t, rec.Summary(overview.DefaultWindow), "stripe-eu").Total)
	require.EqualValues(t, 1, find(t, rec.Summary(overview.DefaultWindow), overview.UnknownProvider).Total)

	rec.SetProviders([]string{"stripe-eu", "stripe-us"})
	rec.Observe(receiver.Delivery{Source: "stripe-us", Provider: "stripe", Outcome: receiver.OutcomeUnrouted})
	require.EqualValues(t, 1, find(t, rec.Summary(overview.DefaultWindow), "stripe-us").Total)
	require.Equal(t, []string{"stripe-eu", "stripe-us"}, rec.Providers())
}
