// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// variables (docs/observability.md, "Traces"): on when an OTLP endpoint is
// set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
// exporting over HTTP with protobuf, or gRPC when the protocol variable
// says grpc; off otherwise, at no cost: Tracing.Tracer is then nil, and the
// receiver, the forwarder and the redriver start no span at all.
//
// It hands out what it builds (Tracer, Propagator) rather than installing
// it as OpenTelemetry's global provider: webhookd's own code is passed its
// tracer, so nothing depends on what another library set up first.
//
// It must never put a secret or a body into a span: the attributes webhookd
// sets are names, keys, outcomes, statuses and counts (see Attr*).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of webhookd's spans.
const ScopeName = "github.com/webhookd/webhookd"

// The attributes of webhookd's spans. Values are never bodies, signatures,
// secrets or URLs with their query.
const (
	AttrProvider   = attribute.Key("webhookd.provider")
	AttrEventKey   = attribute.Key("webhookd.event_key")
	AttrEventType  = attribute.Key("webhookd.event_type")
	AttrOutcome    = attribute.Key("webhookd.outcome")
	AttrAttempts   = attribute.Key("webhookd.attempts")
	AttrAttempt    = attribute.Key("webhookd.attempt")
	AttrStatusCode = attribute.Key("http.response.status_code")
)

// ErrProtocol is returned by New for an OTLP protocol it cannot export
// with (the Go SDK has no http/json exporter).
var ErrProtocol = errors.New("tracing: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or grpc")

// Tracing is what New set up.
type Tracing struct {
	// Provider is the SDK's provider when tracing is on, a no-op one
	// otherwise.
	Provider trace.TracerProvider
	// Tracer is webhookd's tracer when tracing is on, nil otherwise: a nil
	// tracer is how the receiver, dispatch and redrive know to skip their
	// spans entirely.
	Tracer trace.Tracer
	// Propagator writes and reads W3C traceparent and tracestate headers.
	Propagator propagation.TextMapPropagator
	// Exporter names the exporter ("otlp/http", "otlp/grpc"), empty when
	// off.
	Exporter string

	sdk *sdktrace.TracerProvider
}

// Enabled reports whether getenv asks for tracing: an OTLP endpoint is set
// and OTEL_SDK_DISABLED is not true.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New sets tracing up from the OTEL_* variables getenv reads. The
// exporters read their own variables (endpoint, headers, timeout,
// certificates, compression) from the process environment, and the SDK
// reads OTEL_TRACES_SAMPLER and OTEL_BSP_*, as the specification says.
// version is the service.version resource attribute. Call Shutdown before
// exiting, so that the last spans are exported.
func New(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	t := &Tracing{Provider: noop.NewTracerProvider(), Propagator: propagation.TraceContext{}}
	if !Enabled(getenv) {
		return t, nil
	}
	exp, name, err := exporter(ctx, getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		// Defaults first: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
		// override them.
		resource.WithAttributes(attribute.String("service.name", "webhookd"), attribute.String("service.version", version)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	t.sdk = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return t.use(t.sdk, name), nil
}

// NewWith returns Tracing on with the span processor sp: tests and the
// docs' example use it with an in-memory or stdout exporter.
func NewWith(sp sdktrace.SpanProcessor) *Tracing {
	t := &Tracing{Propagator: propagation.TraceContext{}}
	t.sdk = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return t.use(t.sdk, "custom")
}

func (t *Tracing) use(p *sdktrace.TracerProvider, exporter string) *Tracing {
	t.Provider, t.Exporter = p, exporter
	t.Tracer = p.Tracer(ScopeName)
	return t
}

// exporter builds the OTLP exporter the protocol variables ask for.
func exporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, string, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch strings.TrimSpace(proto) {
	case "", "http/protobuf":
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("tracing: otlp/http exporter: %w", err)
		}
		return exp, "otlp/http", nil
	case "grpc":
		exp, err := otlptracegrpc.New(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("tracing: otlp/grpc exporter: %w", err)
		}
		return exp, "otlp/grpc", nil
	}
	return nil, "", fmt.Errorf("%w, not %q", ErrProtocol, proto)
}

// Enabled reports whether spans are recorded.
func (t *Tracing) Enabled() bool { return t.Tracer != nil }

// Shutdown exports the spans still buffered and stops the exporter; a
// no-op when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// LogHandler wraps h so that every record logged with a context that
// carries a span gets its trace_id and span_id: a log line leads to its
// trace. Records without one pass through unchanged.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return l.Handler.Handle(ctx, r)
}

func (l logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{l.Handler.WithAttrs(attrs)}
}

func (l logHandler) WithGroup(name string) slog.Handler {
	return logHandler{l.Handler.WithGroup(name)}
}
