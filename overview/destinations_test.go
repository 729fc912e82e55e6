package overview_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/receiver"
)

func TestSummarySharesEachDestination(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 30, 0, time.UTC)}
	rec := overview.NewRecorder([]string{"stripe-eu", "stripe-us"}, c.now)
	line := func(source, dest string, o receiver.Outcome) {
		rec.Observe(receiver.Delivery{Provider: "stripe", Source: source, Destination: dest, Outcome: o})
	}
	for range 3 {
		line("stripe-eu", "billing", receiver.OutcomeForwarded)
	}
	line("stripe-eu", "billing", receiver.OutcomeUnavailable)
	line("stripe-eu", "billing", receiver.OutcomeReplayed) // never had to reach it
	line("stripe-eu", "ledger", receiver.OutcomeQueued)
	line("stripe-eu", "ledger", receiver.OutcomeQueued)
	line("stripe-us", "billing", receiver.OutcomeCoreRejected) // the core answered: it reached it
	line("nosuch", "billing", receiver.OutcomeForwarded)       // not a source: no destination figures
	rec.Observe(receiver.Delivery{Provider: "stripe", Source: "stripe-eu", Outcome: receiver.OutcomeUnauthorized})

	sum := rec.Summary(overview.DefaultWindow)
	eu := find(t, sum, "stripe-eu")
	require.Len(t, eu.Destinations, 2)
	billing, ledger := eu.Destinations[0], eu.Destinations[1]
	require.Equal(t, "billing", billing.Destination)
	require.Equal(t, uint64(3), billing.Delivered.Reached)
	require.Equal(t, uint64(4), billing.Delivered.Attempted)
	require.InDelta(t, 0.75, *billing.Delivered.Share, 1e-9)
	require.Equal(t, "ledger", ledger.Destination)
	require.Equal(t, uint64(2), ledger.Queued)
	require.Nil(t, ledger.Delivered.Share, "nothing was forwarded to it by the request path")
	us := find(t, sum, "stripe-us")
	require.Len(t, us.Destinations, 1)
	require.InDelta(t, 1.0, *us.Destinations[0].Delivered.Share, 1e-9)
	for _, ps := range sum.Providers {
		if ps.Provider == overview.UnknownProvider {
			require.Empty(t, ps.Destinations)
		}
	}

	// Out of the window, the figures are gone; the rows stay empty.
	c.add(2 * time.Hour)
	eu = find(t, rec.Summary(overview.DefaultWindow), "stripe-eu")
	require.Equal(t, uint64(0), eu.Destinations[0].Delivered.Attempted)
	require.Nil(t, eu.Destinations[0].Delivered.Share)
}

// countingQueue counts its reads.
type countingQueue struct {
	stats map[string]dedupe.QueueStats
	reads map[string]int
	err   error
}

func (q *countingQueue) QueueStats(_ context.Context, d string) (dedupe.QueueStats, error) {
	q.reads[d]++
	return q.stats[d], q.err
}

func TestQueueCounterReadsEachQueueOnceAWhile(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	oldest := c.t.Add(-time.Minute)
	q := &countingQueue{stats: map[string]dedupe.QueueStats{"ledger": {Depth: 5, Oldest: oldest}}, reads: map[string]int{}}
	qc := &overview.QueueCounter{Store: q, Now: c.now}
	ctx := context.Background()
	figs, err := qc.Read(ctx, []string{"ledger", "refunds", "ledger"})
	require.NoError(t, err)
	require.Equal(t, overview.QueueFigures{Depth: 5, Oldest: &oldest}, figs["ledger"])
	require.Equal(t, overview.QueueFigures{}, figs["refunds"], "an empty queue: no oldest")
	_, err = qc.Read(ctx, []string{"refunds", "ledger"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"ledger": 1, "refunds": 1}, q.reads, "one read per queue, reused")

	c.add(overview.DefaultQueueMaxAge)
	_, err = qc.Read(ctx, []string{"ledger", "refunds"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"ledger": 2, "refunds": 2}, q.reads, "read again once stale")
	_, err = qc.Read(ctx, []string{"ledger"}) // a reload dropped refunds
	require.NoError(t, err)
	require.Equal(t, 3, q.reads["ledger"], "other destinations: a fresh read")

	q.err = errors.New("store down")
	c.add(overview.DefaultQueueMaxAge)
	_, err = qc.Read(ctx, []string{"ledger"})
	require.ErrorContains(t, err, "store down")
}

func TestAddQueuesPutsEachQueueOnTheSourcesItServes(t *testing.T) {
	rec := overview.NewRecorder([]string{"stripe-eu", "stripe-us", "xendit"}, nil)
	rec.Observe(receiver.Delivery{Source: "stripe-eu", Destination: "ledger", Outcome: receiver.OutcomeQueued})
	rec.Observe(receiver.Delivery{Source: "stripe-eu", Destination: "billing", Outcome: receiver.OutcomeForwarded})
	sum := rec.Summary(overview.DefaultWindow)
	oldest := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	overview.AddQueues(&sum, map[string][]string{"stripe-eu": {"ledger"}, "stripe-us": {"ledger", "audit"}},
		map[string]overview.QueueFigures{"ledger": {Depth: 7, Oldest: &oldest}, "audit": {}})
	eu := find(t, sum, "stripe-eu")
	require.Len(t, eu.Destinations, 2)
	require.Equal(t, "billing", eu.Destinations[0].Destination)
	require.Nil(t, eu.Destinations[0].Queue, "a sync destination has no queue")
	require.Equal(t, &overview.QueueFigures{Depth: 7, Oldest: &oldest}, eu.Destinations[1].Queue)
	require.Equal(t, uint64(1), eu.Destinations[1].Queued)
	us := find(t, sum, "stripe-us")
	require.Equal(t, []string{"audit", "ledger"}, []string{us.Destinations[0].Destination, us.Destinations[1].Destination},
		"a queue it routes to, without traffic in the window")
	require.Equal(t, 7, us.Destinations[1].Queue.Depth, "the queue is the destination's, whichever source")
	require.Empty(t, find(t, sum, "xendit").Destinations)
}
