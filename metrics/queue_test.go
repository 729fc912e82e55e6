package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/deliver"
	"github.com/webhookd/webhookd/metrics"
)

// fixedQueue answers every destination with its entry in stats, and pauses.
type fixedQueue struct {
	stats  map[string]dedupe.QueueStats
	paused map[string]dedupe.Pause
	err    error
}

func (f fixedQueue) QueueStats(_ context.Context, d string) (dedupe.QueueStats, error) {
	return f.stats[d], f.err
}

func (f fixedQueue) Paused(context.Context) (map[string]dedupe.Pause, error) { return f.paused, nil }

func gatherValues(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name := f.GetName()
			for _, l := range s.GetLabel() {
				name += "/" + l.GetValue()
			}
			switch {
			case s.GetGauge() != nil:
				got[name] = s.GetGauge().GetValue()
			case s.GetCounter() != nil:
				got[name] = s.GetCounter().GetValue()
			}
		}
	}
	return got
}

func TestQueueMetricsReadTheStore(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe"}, Now: func() time.Time { return now }})
	require.NoError(t, err)
	q := fixedQueue{
		stats:  map[string]dedupe.QueueStats{"ledger": {Depth: 7, Oldest: now.Add(-90 * time.Second)}},
		paused: map[string]dedupe.Pause{"ledger": {Paused: true, Since: now}},
	}
	require.NoError(t, m.WatchQueues(q, []metrics.Destination{
		{Name: "ledger", Queue: true, MaxAge: 72 * time.Hour}, {Name: "audit", Queue: true, MaxAge: time.Hour}, {Name: "billing"},
	}))
	observe, err := m.WatchAttempts([]string{"ledger", "audit"})
	require.NoError(t, err)
	observe("ledger", deliver.OutcomeDelivered)
	observe("ledger", deliver.OutcomeDelivered)
	observe("ledger", deliver.OutcomeUnavailable)
	observe("elsewhere", deliver.OutcomeDelivered) // not a destination: not a label
	observe("ledger", "made-up")
	got := gatherValues(t, reg)
	for name, want := range map[string]float64{
		"webhookd_queue_depth/ledger": 7, "webhookd_queue_oldest_seconds/ledger": 90, "webhookd_queue_max_age_seconds/ledger": 72 * 3600,
		"webhookd_queue_depth/audit": 0, "webhookd_queue_oldest_seconds/audit": 0,
		"webhookd_destination_paused/ledger": 1, "webhookd_destination_paused/audit": 0, "webhookd_destination_paused/billing": 0,
		"webhookd_delivery_attempts_total/ledger/delivered": 2, "webhookd_delivery_attempts_total/ledger/unavailable": 1,
		"webhookd_delivery_attempts_total/audit/expired": 0,
	} {
		v, ok := got[name]
		require.True(t, ok, name)
		require.Equal(t, want, v, name)
	}
	require.NotContains(t, got, "webhookd_queue_depth/billing", "a sync destination has no queue")
	require.NotContains(t, got, "webhookd_delivery_attempts_total/elsewhere/delivered")
	require.NotContains(t, got, "webhookd_delivery_attempts_total/ledger/made-up")
}

func TestQueueMetricsErrorLeavesTheRestOfTheScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe"}})
	require.NoError(t, err)
	require.NoError(t, m.WatchQueues(fixedQueue{err: errors.New("store down")}, []metrics.Destination{{Name: "ledger", Queue: true}}))
	_, err = reg.Gather()
	require.ErrorContains(t, err, "store down")
	m.Handler() // the handler serves the rest (promhttp.ContinueOnError)
}

func TestQueueMetricsFollowAReload(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{Providers: []string{"stripe"}, Now: func() time.Time { return now }})
	require.NoError(t, err)
	q := fixedQueue{stats: map[string]dedupe.QueueStats{
		"ledger": {Depth: 1, Oldest: now.Add(-time.Second)}, "refunds": {Depth: 4, Oldest: now.Add(-30 * time.Second)},
	}}
	require.NoError(t, m.WatchQueues(q, []metrics.Destination{{Name: "ledger", Queue: true, MaxAge: time.Hour}}))
	observe, err := m.WatchAttempts([]string{"ledger"})
	require.NoError(t, err)

	// The reload removes nothing and adds refunds, a queue destination.
	m.SetDestinations([]metrics.Destination{
		{Name: "ledger", Queue: true, MaxAge: time.Hour}, {Name: "refunds", Queue: true, MaxAge: 2 * time.Hour},
	})
	observe("refunds", deliver.OutcomeDelivered)
	observe("ledger", deliver.OutcomeDelivered)
	got := gatherValues(t, reg)
	for name, want := range map[string]float64{
		"webhookd_queue_depth/refunds": 4, "webhookd_queue_oldest_seconds/refunds": 30, "webhookd_queue_max_age_seconds/refunds": 7200,
		"webhookd_destination_paused/refunds":                0,
		"webhookd_delivery_attempts_total/refunds/delivered": 1, "webhookd_delivery_attempts_total/refunds/expired": 0,
		"webhookd_delivery_attempts_total/ledger/delivered": 1,
	} {
		v, ok := got[name]
		require.True(t, ok, name)
		require.Equal(t, want, v, name)
	}

	// A second reload drops ledger: its queue is no longer read, its
	// counts stay.
	m.SetDestinations([]metrics.Destination{{Name: "refunds", Queue: true, MaxAge: 2 * time.Hour}})
	got = gatherValues(t, reg)
	require.NotContains(t, got, "webhookd_queue_depth/ledger")
	require.Equal(t, 1.0, got["webhookd_delivery_attempts_total/ledger/delivered"])
}
