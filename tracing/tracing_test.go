package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/webhookd/webhookd/tracing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		on       bool
		exporter string
		err      error
	}{
		{"nothing set: off", nil, false, "", nil},
		{"endpoint: otlp/http", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, "otlp/http", nil},
		{"traces endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, "otlp/http", nil},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, "otlp/grpc", nil},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, true, "otlp/grpc", nil},
		{"http/json is refused", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "", tracing.ErrProtocol},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := tracing.New(context.Background(), env(tc.env), "test")
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
			require.Equal(t, tc.on, tr.Enabled())
			require.Equal(t, tc.on, tr.Tracer != nil)
			require.Equal(t, tc.exporter, tr.Exporter)
			require.NotNil(t, tr.Provider)
			require.NotNil(t, tr.Propagator)
		})
	}
}

func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "test")
	tr := tracing.NewWith(tracetest.NewSpanRecorder())
	ctx, span := tr.Tracer.Start(context.Background(), "delivery")
	log.InfoContext(ctx, "inside")
	log.Info("outside")
	span.End()
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	require.Contains(t, string(lines[0]), "trace_id="+span.SpanContext().TraceID().String())
	require.Contains(t, string(lines[0]), "span_id="+span.SpanContext().SpanID().String())
	require.Contains(t, string(lines[0]), "component=test")
	require.NotContains(t, string(lines[1]), "trace_id")
}
