package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/receiver"
)

// syncBuffer lets a slog handler and the test share a buffer under -race.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func jsonLogger(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// logLines decodes a JSON log, one record per line.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	return lines
}

func withMessage(lines []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

func TestOneLogLinePerDeliveryWithoutSecrets(t *testing.T) {
	var buf syncBuffer
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) { c.Logger = jsonLogger(&buf) }
	})
	const marker = "card_holder_marker_never_logged"
	body := []byte(`{"id":"evt_log","object":"event","type":"charge.succeeded","data":{"object":{"name":"` + marker + `"}}}`)
	sig := sign(t, body)
	require.Equal(t, http.StatusCreated, h.post("stripe", body, sig).status)                                  // forwarded
	require.Equal(t, http.StatusCreated, h.post("stripe", body, sig).status)                                  // replayed
	require.Equal(t, http.StatusUnauthorized, h.post("stripe", body, sig+"0").status)                         // bad signature
	require.Equal(t, http.StatusNotFound, h.post("paypal", body, sig).status)                                 // unknown provider
	require.Equal(t, http.StatusBadRequest, h.post("stripe", []byte(marker), sign(t, []byte(marker))).status) // not JSON

	out := buf.String()
	lines := withMessage(logLines(t, out), "delivery")
	require.Len(t, lines, 5, out)
	want := []struct {
		provider, key, outcome string
		status                 float64
	}{
		{"stripe", "stripe:evt_log", "forwarded", 201},
		{"stripe", "stripe:evt_log", "replayed", 201},
		{"stripe", "", "unauthorized", 401},
		{"paypal", "", "not_found", 404},
		{"stripe", "", "bad_request", 400},
	}
	for i, w := range want {
		l := lines[i]
		require.Equal(t, w.provider, l["provider"], "line %d", i)
		require.Equal(t, w.key, l["key"], "line %d", i)
		require.Equal(t, w.outcome, l["outcome"], "line %d", i)
		require.Equal(t, w.status, l["status"], "line %d", i)
		require.Contains(t, l, "latency", "line %d", i)
	}
	require.Equal(t, "charge.succeeded", lines[0]["type"])
	require.EqualValues(t, 1, lines[0]["attempts"])
	require.EqualValues(t, 201, lines[0]["downstream_status"])

	for _, s := range []string{secret, strings.TrimPrefix(secret, "whsec_"), sig, marker} {
		require.NotContains(t, out, s)
	}
	// The v1 signature alone, too (sig also holds the timestamp).
	_, v1, _ := strings.Cut(sig, "v1=")
	require.NotContains(t, out, v1)
}

// panicky is a provider whose Parse panics: a bug in an adapter.
type panicky struct{ requestBound }

func (panicky) Name() string                                     { return "panicky" }
func (panicky) Verify(context.Context, providers.Delivery) error { return nil }
func (panicky) Parse(providers.Delivery) ([]providers.Item, error) {
	panic("adapter bug: index out of range")
}

// panickingForwarder panics after the key has been claimed.
type panickingForwarder struct{}

func (panickingForwarder) Forward(context.Context, dispatch.Request) dispatch.Result {
	panic("forwarder bug")
}

func TestPanicIsABare500WithTheStackInTheLog(t *testing.T) {
	var buf syncBuffer
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) {
			c.Logger = jsonLogger(&buf)
			require.NoError(t, c.Providers.Register(panicky{}))
		}
	})
	r := h.post("panicky", []byte(`{}`), "")
	require.Equal(t, http.StatusInternalServerError, r.status)
	require.JSONEq(t, `{"error":"Internal Server Error"}`, r.body)
	require.NotContains(t, r.body, "goroutine")
	require.NotContains(t, r.body, "adapter bug")

	lines := logLines(t, buf.String())
	panics := withMessage(lines, "panic serving request")
	require.Len(t, panics, 1)
	require.Equal(t, "ERROR", panics[0]["level"])
	require.Equal(t, "adapter bug: index out of range", panics[0]["panic"])
	require.Contains(t, panics[0]["stack"], "receiver_test.panicky.Parse", "the stack shows where it panicked")
	deliveries := withMessage(lines, "delivery")
	require.Len(t, deliveries, 1)
	require.Equal(t, "error", deliveries[0]["outcome"])
	require.EqualValues(t, 500, deliveries[0]["status"])

	// The server is still serving.
	require.Equal(t, http.StatusCreated, h.deliver(event("evt_after_panic", 1)).status)
}

func TestPanicAfterClaimReleasesTheKey(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) { c.Forwarder = panickingForwarder{} }
	})
	r := h.deliver(event("evt_panic", 1))
	require.Equal(t, http.StatusInternalServerError, r.status)
	require.Empty(t, h.records(), "the claim was released, so the provider's retry is not blocked by a 409")
}

func TestShutdownCancelsForwardsReleasesKeysAndAnswers503(t *testing.T) {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	h := newHarness(t, func(h *harness) {
		h.fwdTO = 30 * time.Second // far longer than the test: only the base context can end it
		h.config = func(c *receiver.Config) { c.BaseContext = base }
	})
	unblock := make(chan struct{})
	defer close(unblock)
	h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	done := make(chan reply, 1)
	go func() { done <- h.deliver(event("evt_shutdown", 1)) }()
	require.Eventually(t, func() bool { return h.down.calls.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
	cancelBase() // the grace period is over

	var r reply
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery did not end when the base context was cancelled")
	}
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Contains(t, r.body, "shutting down")
	require.Empty(t, h.records(), "the key was released for the provider's retry")

	// A delivery that arrives now is not claimed or forwarded at all.
	r = h.deliver(event("evt_late", 1))
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Empty(t, h.records())
	require.EqualValues(t, 1, h.down.calls.Load())
}

func TestProviderHangingUpDoesNotCancelTheForward(t *testing.T) {
	h := newHarness(t)
	arrived := make(chan struct{})
	release := make(chan struct{})
	h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.WriteHeader(http.StatusOK)
	})
	body := event("evt_hangup", 1)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.srv.URL+"/webhooks/stripe", strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", sign(t, body))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-arrived
	cancel() // the provider gives up waiting
	require.Error(t, <-errc)
	close(release)
	require.Eventually(t, func() bool { return h.state("stripe:evt_hangup") == dedupe.Completed },
		5*time.Second, 5*time.Millisecond, "the forward finished and was recorded COMPLETED")
}
