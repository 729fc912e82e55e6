package receiver_test

import (
	"io"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/tracing"
)

// BenchmarkDeliveryTracing measures what tracing costs the receive path,
// side by side in one run: tracing=off is serve without an OTLP endpoint
// (no Tracer: no span is started), tracing=noop hands the receiver
// OpenTelemetry's no-op tracer instead, and tracing=on records every span
// (sampled, batched, exported to nowhere) as with an endpoint set. The
// forwarder is in memory, so its per-attempt spans are not in these
// figures (BenchmarkForward's are in package dispatch):
//
//	go test ./receiver -run '^$' -bench DeliveryTracing -benchmem -count 6
func BenchmarkDeliveryTracing(b *testing.B) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, mode := range []string{"off", "noop", "on"} {
		b.Run("event=new/tracing="+mode, func(b *testing.B) {
			set := func(*receiver.Config) {}
			switch mode {
			case "noop":
				set = func(c *receiver.Config) { c.Tracer = noop.NewTracerProvider().Tracer("bench") }
			case "on":
				tr := tracing.NewWith(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tr.Shutdown(b.Context()) })
				set = func(c *receiver.Config) { c.Tracer = tr.Tracer }
			}
			benchDeliveryWith(b, "new", logger, set)
		})
	}
}
