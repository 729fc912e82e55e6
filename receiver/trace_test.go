package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/redrive"
	"github.com/webhookd/webhookd/tracing"
)

// tracedCore is a core service that fails the first request of each event
// with 503 and keeps every traceparent it receives.
type tracedCore struct {
	mu      sync.Mutex
	parents []string
	seen    map[string]bool
	status  int
}

func (c *tracedCore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parents = append(c.parents, r.Header.Get("Traceparent"))
	key := r.Header.Get("Idempotency-Key")
	if !c.seen[key] {
		c.seen[key] = true
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(c.status)
}

func (c *tracedCore) traceparents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.parents...)
}

type tracedFixture struct {
	recv  http.Handler
	exp   *tracetest.InMemoryExporter
	core  *tracedCore
	store dedupe.Store
	fwd   *dispatch.Forwarder
	tr    *tracing.Tracing
	logs  *bytes.Buffer
}

func newTracedFixture(t *testing.T, sp sdktrace.SpanProcessor) *tracedFixture {
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	exp := tracetest.NewInMemoryExporter()
	if sp == nil {
		sp = sdktrace.NewSimpleSpanProcessor(exp)
	}
	tr := tracing.NewWith(sp)
	core := &tracedCore{seen: map[string]bool{}, status: http.StatusOK}
	srv := httptest.NewServer(core)
	t.Cleanup(srv.Close)
	fwd, err := dispatch.New(dispatch.Options{URL: srv.URL, Timeout: 2 * time.Second, Retries: 2,
		RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond, Tracer: tr.Tracer, Propagator: tr.Propagator})
	require.NoError(t, err)
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(ad))
	logs := &bytes.Buffer{}
	h, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 1 << 20, StoreRequests: true,
		Tracer: tr.Tracer, Logger: slog.New(tracing.LogHandler(slog.NewJSONHandler(logs, nil)))})
	require.NoError(t, err)
	return &tracedFixture{recv: h, exp: exp, core: core, store: store, fwd: fwd, tr: tr, logs: logs}
}

func (f *tracedFixture) deliver(t *testing.T, id string, hdr http.Header) int {
	body := event(id, 1000)
	req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(body))
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Stripe-Signature", sign(t, body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	f.recv.ServeHTTP(w, req)
	return w.Code
}

func attrs(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// TestDeliveryTrace: one delivery is one trace (verify, claim, one span
// per forward attempt, record, under the delivery's root), the core
// service receives each attempt's traceparent, an incoming traceparent is
// a link and not the parent, no attribute holds the body or the secret,
// and the delivery's log line carries the trace id.
func TestDeliveryTrace(t *testing.T) {
	f := newTracedFixture(t, nil)
	incoming := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	require.Equal(t, http.StatusOK, f.deliver(t, "evt_traced_1", http.Header{"Traceparent": {incoming}, "Tracestate": {"acme=caller-text"}}))

	spans := f.exp.GetSpans()
	names := []string{}
	for _, s := range spans {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"verify", "claim", "forward attempt", "forward attempt", "record", "delivery"}, names)
	root := spans[len(spans)-1]
	require.False(t, root.Parent.IsValid(), "a new root")
	require.NotEqual(t, "0af7651916cd43dd8448eb211c80319c", root.SpanContext.TraceID().String(), "the caller does not pick the trace")
	require.Len(t, root.Links, 1)
	require.Equal(t, "0af7651916cd43dd8448eb211c80319c", root.Links[0].SpanContext.TraceID().String())
	require.Zero(t, root.Links[0].SpanContext.TraceState().Len(), "the caller's tracestate is not exported")
	for _, s := range spans[:len(spans)-1] {
		require.Equal(t, root.SpanContext.TraceID(), s.SpanContext.TraceID(), s.Name)
		require.Equal(t, root.SpanContext.SpanID(), s.Parent.SpanID(), s.Name)
	}
	a := attrs(root)
	require.Equal(t, "stripe", a["webhookd.provider"])
	require.Equal(t, "evt_traced_1", a["webhookd.event_key"])
	require.Equal(t, "forwarded", a["webhookd.outcome"])
	require.Equal(t, "200", a["http.response.status_code"])
	require.Equal(t, "2", a["webhookd.attempts"])
	for _, s := range spans {
		for _, kv := range s.Attributes {
			require.NotContains(t, kv.Value.Emit(), secret, s.Name)
			require.NotContains(t, kv.Value.Emit(), `"amount"`, "%s: a body in %s", s.Name, kv.Key)
		}
	}

	parents := f.core.traceparents()
	require.Len(t, parents, 2)
	for i, s := range spans[2:4] {
		require.Equal(t, "00-"+root.SpanContext.TraceID().String()+"-"+s.SpanContext.SpanID().String()+"-01", parents[i])
	}

	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(lastLine(f.logs.String())), &line))
	require.Equal(t, "delivery", line["msg"])
	require.Equal(t, root.SpanContext.TraceID().String(), line["trace_id"])

	// A replayed duplicate is a trace of its own, without a forward.
	f.exp.Reset()
	require.Equal(t, http.StatusOK, f.deliver(t, "evt_traced_1", nil))
	names = names[:0]
	for _, s := range f.exp.GetSpans() {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"verify", "claim", "delivery"}, names)
	require.Equal(t, "replayed", attrs(f.exp.GetSpans()[2])["webhookd.outcome"])
}

// TestUnknownProviderTrace: the path of an unknown provider is the
// caller's text, and stays out of the span's attributes.
func TestUnknownProviderTrace(t *testing.T) {
	f := newTracedFixture(t, nil)
	junk := strings.Repeat("x", 64) + "-not-a-provider"
	req := httptest.NewRequest(http.MethodPost, "/webhooks/"+junk, strings.NewReader("{}"))
	w := httptest.NewRecorder()
	f.recv.ServeHTTP(w, req)
	require.Equal(t, http.StatusNotFound, w.Code)
	spans := f.exp.GetSpans()
	require.Len(t, spans, 1)
	for _, kv := range spans[0].Attributes {
		require.NotContains(t, kv.Value.Emit(), junk, kv.Key)
	}
	require.Equal(t, "not_found", attrs(spans[0])["webhookd.outcome"])
}

// TestRedriveTrace: a redrive is a trace too, and the core service gets
// its traceparent.
func TestRedriveTrace(t *testing.T) {
	f := newTracedFixture(t, nil)
	f.core.status = http.StatusUnprocessableEntity
	require.Equal(t, http.StatusUnprocessableEntity, f.deliver(t, "evt_redrive_1", nil))
	f.exp.Reset()
	f.core.status = http.StatusOK
	rd := &redrive.Redriver{Store: f.store, Forwarder: f.fwd, Tracer: f.tr.Tracer}
	_, err := rd.Redrive(context.Background(), "stripe:evt_redrive_1")
	require.NoError(t, err)
	spans := f.exp.GetSpans()
	require.Equal(t, "redrive", spans[len(spans)-1].Name)
	require.Equal(t, "forward attempt", spans[0].Name)
	parents := f.core.traceparents()
	require.True(t, strings.HasPrefix(parents[len(parents)-1], "00-"+spans[0].SpanContext.TraceID().String()+"-"))
}

// TestTraceExample prints one delivery's trace as the SDK's stdout
// exporter writes it (docs/observability.md shows it):
//
//	WEBHOOKD_TRACE_EXAMPLE=1 go test ./receiver -run TestTraceExample -v
func TestTraceExample(t *testing.T) {
	if os.Getenv("WEBHOOKD_TRACE_EXAMPLE") != "1" {
		t.Skip("set WEBHOOKD_TRACE_EXAMPLE=1 to print a trace")
	}
	exp, err := stdoutExporter(os.Stdout)
	require.NoError(t, err)
	f := newTracedFixture(t, sdktrace.NewSimpleSpanProcessor(exp))
	require.Equal(t, http.StatusOK, f.deliver(t, "evt_1QbExample", nil))
	require.NoError(t, f.tr.Shutdown(context.Background()))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// stdoutExporter is the SDK's stdout exporter, indented, to w.
func stdoutExporter(w io.Writer) (sdktrace.SpanExporter, error) {
	return stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
}
