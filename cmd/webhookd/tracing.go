package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/webhookd/webhookd/tracing"
)

// tracingFlushTimeout bounds the export of the spans still buffered at exit.
const tracingFlushTimeout = 5 * time.Second

// startTracing sets tracing up from the OTEL_* variables
// (docs/observability.md, "Traces"). When it is on, log is wrapped so that
// records logged with a delivery's context carry its trace_id. stop
// exports the spans still buffered; call it before exiting.
func startTracing(ctx context.Context, log *slog.Logger) (tr *tracing.Tracing, traced *slog.Logger, stop func(), err error) {
	tr, err = tracing.New(ctx, os.Getenv, buildVersion())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("OTEL_*: %w", err)
	}
	if !tr.Enabled() {
		return tr, log, func() {}, nil
	}
	traced = slog.New(tracing.LogHandler(log.Handler()))
	traced.Info("tracing deliveries", "exporter", tr.Exporter)
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			traced.Warn("tracing: exporting the last spans failed", "error", err.Error())
		}
	}
	return tr, traced, stop, nil
}

// buildVersion is the module version the binary was built from, for the
// service.version resource attribute.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
