package dispatch_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/webhookd/webhookd/dispatch"
)

// benchBody is about the size of a Stripe payment_intent event.
var benchBody = []byte(`{"id":"evt_bench","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":2000,"currency":"usd","metadata":{"order":"` + strings.Repeat("x", 1800) + `"}}}}`)

// benchDownstream answers 200 with a short JSON body, as a core service
// that accepted the event does.
func benchDownstream(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkForward is one delivered forward over a kept-alive connection,
// unsigned, signed, and traced (a span for the attempt, exported to
// nowhere, and its traceparent sent): the forwarder's own cost on top of
// net/http's (BenchmarkBareClient, the same request sent with
// http.Client).
//
//	go test ./dispatch -run '^$' -bench 'Forward|BareClient' -benchmem -count 6
func BenchmarkForward(b *testing.B) {
	for _, name := range []string{"unsigned", "signed", "traced"} {
		opts := dispatch.Options{Timeout: 10 * time.Second, Retries: 2}
		switch name {
		case "signed":
			opts.SigningSecrets = []string{"whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
		case "traced":
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			opts.Tracer = tp.Tracer("bench")
		}
		b.Run(name, func(b *testing.B) {
			srv := benchDownstream(b)
			opts.URL = srv.URL
			f, err := dispatch.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer f.CloseIdleConnections()
			req := dispatch.Request{
				Provider: "stripe", IdempotencyKey: "stripe:evt_bench", EventKey: "evt_bench",
				EventType: "payment_intent.succeeded", Body: benchBody,
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if res := f.Forward(ctx, req); res.Outcome != dispatch.Delivered {
					b.Fatalf("%+v", res)
				}
			}
		})
	}
}

// BenchmarkBareClient sends BenchmarkForward's request with a plain
// http.Client: the floor Forward's overhead is measured against.
func BenchmarkBareClient(b *testing.B) {
	srv := benchDownstream(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	b.ReportAllocs()
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(benchBody)))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "stripe:evt_bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
}
