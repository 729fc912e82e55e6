package dispatch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/webhookd/webhookd/dispatch"
)

// TestForwardTracesEachAttempt: with a Tracer, each attempt is a span of
// its own, a child of the caller's span, and the core service receives
// that attempt's traceparent; without one it receives none.
func TestForwardTracesEachAttempt(t *testing.T) {
	var mu sync.Mutex
	var parents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		parents = append(parents, r.Header.Get("Traceparent"))
		n := len(parents)
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracer := tp.Tracer("test")
	for _, signed := range []bool{false, true} {
		mu.Lock()
		parents = nil
		mu.Unlock()
		exp.Reset()
		f := newForwarder(t, srv.URL+"?token=tok-must-not-leak", func(o *dispatch.Options) {
			o.Tracer = tracer
			if signed {
				o.SigningSecrets = []string{downstreamSecret}
			}
		})
		ctx, root := tracer.Start(context.Background(), "delivery")
		res := f.Forward(ctx, testRequest())
		root.End()
		require.Equal(t, dispatch.Delivered, res.Outcome)
		require.Equal(t, 3, res.Attempts)

		spans := exp.GetSpans()
		require.Len(t, spans, 4, "three attempts and the root")
		mu.Lock()
		got := append([]string(nil), parents...)
		mu.Unlock()
		for i, s := range spans[:3] {
			require.Equal(t, "forward attempt", s.Name)
			require.Equal(t, root.SpanContext().TraceID(), s.SpanContext.TraceID())
			require.Equal(t, root.SpanContext().SpanID(), s.Parent.SpanID())
			want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
			require.Equal(t, want, got[i], "attempt %d carries its own span as traceparent", i+1)
			attrs := attribute.NewSet(s.Attributes...)
			v, _ := attrs.Value("webhookd.attempt")
			require.EqualValues(t, i+1, v.AsInt64())
			v, _ = attrs.Value("http.response.status_code")
			require.EqualValues(t, []int{503, 503, 200}[i], v.AsInt64())
			for _, a := range s.Attributes {
				require.NotContains(t, a.Value.Emit(), "tok-must-not-leak")
			}
		}
	}

	// Without a Tracer: no traceparent, even inside a caller's span.
	mu.Lock()
	parents = nil
	mu.Unlock()
	ctx, root := tracer.Start(context.Background(), "delivery")
	res := newForwarder(t, srv.URL, nil).Forward(ctx, testRequest())
	root.End()
	require.Equal(t, dispatch.Delivered, res.Outcome)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"", "", ""}, parents)
}

// TestForwardTraceOnConnectionFailure: an attempt that got no answer ends
// its span with an error that does not quote the URL's query.
func TestForwardTraceOnConnectionFailure(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := newForwarder(t, "http://127.0.0.1:1/events?token=tok-must-not-leak", func(o *dispatch.Options) {
		o.Tracer = tp.Tracer("test")
		o.Timeout = 2 * time.Second
	})
	res := f.Forward(context.Background(), testRequest())
	require.Equal(t, dispatch.Unavailable, res.Outcome)
	spans := exp.GetSpans()
	require.Len(t, spans, res.Attempts)
	for _, s := range spans {
		require.Equal(t, "Error", s.Status.Code.String())
		require.NotEmpty(t, s.Status.Description)
		require.NotContains(t, s.Status.Description, "tok-must-not-leak")
	}
}
