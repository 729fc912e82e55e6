package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeExportsTraces runs serve with an OTLP/HTTP endpoint set: a
// delivery reaches the core service with a traceparent, and its spans
// are exported to the endpoint when serve stops. Without the endpoint the
// core service gets no traceparent.
func TestServeExportsTraces(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			var mu sync.Mutex
			var exports int
			collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if r.URL.Path == "/v1/traces" {
					mu.Lock()
					exports++
					mu.Unlock()
				}
				w.Header().Set("Content-Type", "application/x-protobuf")
			}))
			t.Cleanup(collector.Close)
			var parents []string
			core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				parents = append(parents, r.Header.Get("Traceparent"))
				mu.Unlock()
			}))
			t.Cleanup(core.Close)

			if on {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
			} else {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			}
			t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
			t.Setenv("WEBHOOKD_DATA_DIR", t.TempDir())
			t.Setenv("WEBHOOKD_DOWNSTREAM_URL", core.URL)
			t.Setenv("WEBHOOKD_XENDIT_CALLBACK_TOKENS", "xnd-trace-token")
			cfg, err := loadConfig()
			require.NoError(t, err)
			var logs bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			ready := make(chan string, 1)
			done := make(chan error, 1)
			go func() { done <- serve(ctx, cfg, newLogger(cfg, &logs), ready) }()
			var addr string
			select {
			case addr = <-ready:
			case err := <-done:
				t.Fatalf("serve: %v", err)
			}

			req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/xendit",
				strings.NewReader(`{"id":"inv_trace_1","external_id":"order-1","status":"PAID","amount":1000}`))
			require.NoError(t, err)
			req.Header.Set("X-Callback-Token", "xnd-trace-token")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Fatal("serve did not stop")
			}

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, parents, 1)
			if on {
				require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, parents[0])
				require.Positive(t, exports, "spans exported at exit")
				require.Contains(t, logs.String(), "tracing deliveries")
				require.Contains(t, logs.String(), "trace_id=")
			} else {
				require.Empty(t, parents[0])
				require.Zero(t, exports)
				require.NotContains(t, logs.String(), "trace_id")
			}
		})
	}
}
