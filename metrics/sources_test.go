package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/metrics"
	"github.com/webhookd/webhookd/receiver"
)

// TestSourceLabelBounded: the source label takes the configuration's
// names only (after a reload too), never a request's.
func TestSourceLabelBounded(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Options{Providers: []string{"stripe"},
		Sources: map[string]string{"stripe-eu": "stripe"}, RecordsMaxAge: -1})
	require.NoError(t, err)
	values := func() map[string]float64 {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		f, err := parser.TextToMetricFamilies(rec.Body)
		require.NoError(t, err)
		out := map[string]float64{}
		for _, s := range f["webhookd_deliveries_total"].GetMetric() {
			key := ""
			for _, l := range s.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			out[key] = s.GetCounter().GetValue()
		}
		return out
	}
	require.Contains(t, values(), "outcome=forwarded provider=stripe source=stripe-eu ", "created at zero")
	m.ObserveDelivery(receiver.Delivery{Source: "stripe-eu", Provider: "stripe", Outcome: receiver.OutcomeForwarded})
	m.ObserveDelivery(receiver.Delivery{Source: "attacker-chosen", Provider: "stripe", Outcome: receiver.OutcomeForwarded})
	v := values()
	require.Equal(t, 1.0, v["outcome=forwarded provider=stripe source=stripe-eu "])
	require.Equal(t, 1.0, v["outcome=forwarded provider=stripe source=unknown "])
	require.NotContains(t, v, "outcome=forwarded provider=stripe source=attacker-chosen ")

	require.NoError(t, m.SetSources(map[string]string{"stripe-us": "stripe"}))
	m.ObserveDelivery(receiver.Delivery{Source: "stripe-us", Provider: "stripe", Outcome: receiver.OutcomeUnrouted})
	m.ObserveDelivery(receiver.Delivery{Source: "stripe-eu", Provider: "stripe", Outcome: receiver.OutcomeForwarded})
	v = values()
	require.Equal(t, 1.0, v["outcome=unrouted provider=stripe source=stripe-us "], "a reloaded source")
	require.Equal(t, 2.0, v["outcome=forwarded provider=stripe source=unknown "], "a source the reload removed")
	require.Error(t, m.SetSources(map[string]string{"unknown": "stripe"}))
}
