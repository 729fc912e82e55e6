package receiver_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/webhookd/webhookd/metrics"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/receiver"
)

// BenchmarkDeliveryReport measures what the delivery's reporting adds to
// the receive path, side by side in one run: report=none has no
// OnDelivery, report=metrics the Prometheus counters serve wires, and
// report=metrics+overview those and the overview's per-minute counters
// (package overview), as serve runs it:
//
//	go test ./receiver -run '^$' -bench DeliveryReport -benchmem -count 6
func BenchmarkDeliveryReport(b *testing.B) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, report := range []string{"none", "metrics", "metrics+overview"} {
		b.Run("event=new/report="+report, func(b *testing.B) {
			var on func(receiver.Delivery)
			if report != "none" {
				m, err := metrics.New(prometheus.NewRegistry(), metrics.Options{Providers: []string{"stripe"}})
				if err != nil {
					b.Fatal(err)
				}
				on = m.ObserveDelivery
				if report == "metrics+overview" {
					rec := overview.NewRecorder([]string{"stripe"}, nil)
					on = func(d receiver.Delivery) { m.ObserveDelivery(d); rec.Observe(d) }
				}
			}
			benchDeliveryWith(b, "new", logger, func(c *receiver.Config) { c.OnDelivery = on })
		})
	}
}
