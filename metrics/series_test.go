package metrics

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/receiver"
)

// TestSeriesCacheKeepsEveryChild: children stored from many goroutines at
// once are all found afterwards, each as it was stored.
func TestSeriesCacheKeepsEveryChild(t *testing.T) {
	var c seriesCache[string, int]
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := fmt.Sprint(i % 16)
			if _, ok := c.lookup(k); !ok {
				c.store(k, i%16)
			}
		}()
	}
	wg.Wait()
	for i := range 16 {
		v, ok := c.lookup(fmt.Sprint(i))
		require.True(t, ok, i)
		require.Equal(t, i, v)
	}
	_, ok := c.lookup("16")
	require.False(t, ok)
}

// TestObserveDeliveryCountsThroughTheCache: the cached children are the
// vectors' own series (the exposition counts every delivery), and a
// delivery with cached labels allocates nothing.
func TestObserveDeliveryCountsThroughTheCache(t *testing.T) {
	m, err := New(prometheus.NewRegistry(), Options{Providers: []string{"stripe"}, RecordsMaxAge: -1})
	require.NoError(t, err)
	d := receiver.Delivery{Source: "stripe", Provider: "stripe", Outcome: receiver.OutcomeForwarded, Duration: time.Millisecond,
		Dispatch: &dispatch.Result{Outcome: dispatch.Delivered, Attempts: 2, Duration: time.Millisecond}}
	for range 3 {
		m.ObserveDelivery(d)
	}
	value := func(c prometheus.Collector) *dto.Metric {
		var pb dto.Metric
		require.NoError(t, c.(prometheus.Metric).Write(&pb))
		return &pb
	}
	require.Equal(t, 3.0, value(m.deliveries.WithLabelValues("stripe", "stripe", "forwarded")).GetCounter().GetValue())
	require.Equal(t, 6.0, value(m.dispatchAttempts.WithLabelValues("stripe")).GetCounter().GetValue())
	require.EqualValues(t, 3, value(m.deliveryDuration.WithLabelValues("stripe").(prometheus.Histogram)).GetHistogram().GetSampleCount())
	require.EqualValues(t, 3, value(m.dispatchDuration.WithLabelValues("stripe", "delivered").(prometheus.Histogram)).GetHistogram().GetSampleCount())
	if raceEnabled {
		return
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { m.ObserveDelivery(d) }))
}
