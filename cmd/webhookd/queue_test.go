package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queueCore is a core service that is down until up is set, and counts
// what it is sent by Idempotency-Key.
type queueCore struct {
	*httptest.Server
	up       atomic.Bool
	reject   atomic.Bool // answer 422 while up
	rejected chan string
	mu       sync.Mutex
	got      map[string]int
	hit      chan string // every request that reached it while up
}

func newQueueCore(t *testing.T) *queueCore {
	c := &queueCore{got: map[string]int{}, hit: make(chan string, 100), rejected: make(chan string, 100)}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !c.up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if c.reject.Load() {
			w.WriteHeader(http.StatusUnprocessableEntity)
			c.rejected <- key
			return
		}
		c.mu.Lock()
		c.got[key]++
		c.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		c.hit <- key
	}))
	t.Cleanup(c.Close)
	return c
}

// TestServeQueueDestination: with the core down, a queue destination's
// events are acknowledged at once; once it is up, each is delivered once,
// and a gateway retry is acknowledged without a second delivery.
func TestServeQueueDestination(t *testing.T) {
	core := newQueueCore(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.yaml")
	writeFile(t, file, fmt.Sprintf(`sources:
  - {name: stripe-eu, provider: stripe, settings: {secrets: "${EU_SECRET}"}}
destinations:
  - {name: ledger, url: %q, delivery: queue, max_age: 1h, timeout: 2s}
routes:
  - {source: stripe-eu, to: [ledger]}
`, core.URL))
	env := map[string]string{"WEBHOOKD_CONFIG": file, "WEBHOOKD_DATA_DIR": filepath.Join(dir, "data"), "EU_SECRET": euTestSecret}
	s := startServe(t, env)
	post := func(id string) *http.Response {
		body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","data":{"object":{}}}`, id))
		req, err := http.NewRequest(http.MethodPost, s.url+"/webhooks/stripe-eu", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", stripeSignature(t, euTestSecret, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	const n = 5
	for i := range n {
		require.Equal(t, http.StatusOK, post(fmt.Sprintf("evt_%d", i)).StatusCode, "acknowledged with the core down")
	}
	core.up.Store(true)
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case key := <-core.hit:
			seen[key] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("delivered %d of %d; log:\n%s", len(seen), n, s.logs())
		}
	}
	resp := post("evt_0")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))

	// The CLI, beside the running serve, on the same store.
	out, errOut, code := execWebhookd(t, env, "destinations", "pause", "ledger")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	out, errOut, code = execWebhookd(t, env, "destinations", "list")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Regexp(t, `ledger\s+queue\s+since \S+\s+0\s+-`, out)
	_, _, code = execWebhookd(t, env, "destinations", "pause", "nowhere")
	require.Equal(t, 2, code)
	_, _, code = execWebhookd(t, env, "destinations", "resume", "ledger")
	require.Equal(t, 0, code)
	out, _, _ = execWebhookd(t, env, "destinations", "list")
	require.Regexp(t, `ledger\s+queue\s+no\s+0\s+-`, out)

	// A permanent rejection is FAILED; keys redrive requeues it.
	core.reject.Store(true)
	require.Equal(t, http.StatusOK, post("evt_r").StatusCode)
	require.Equal(t, "stripe-eu:evt_r", <-core.rejected)
	core.reject.Store(false)
	var redriven string
	for try := 0; !strings.Contains(redriven, "requeued"); try++ { // the FAILED record lands just after the answer
		require.Less(t, try, 100, "never requeued: %s", errOut)
		redriven, errOut, code = execWebhookd(t, env, "keys", "redrive", "--state", "failed", "--destination", "ledger", "--type", "invoice.*")
		require.Contains(t, []int{0, 1}, code, errOut)
	}
	require.Contains(t, redriven, "stripe-eu:evt_r")
	select {
	case key := <-core.hit:
		require.Equal(t, "stripe-eu:evt_r", key)
	case <-time.After(30 * time.Second):
		t.Fatalf("the requeued event was not delivered; log:\n%s", s.logs())
	}

	core.mu.Lock()
	defer core.mu.Unlock()
	for i := range n {
		require.Equal(t, 1, core.got[fmt.Sprintf("stripe-eu:evt_%d", i)], "each delivered once")
	}
}
