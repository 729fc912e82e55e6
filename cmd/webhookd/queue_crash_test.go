package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueueSurvivesKill9: serve is killed with SIGKILL while attempts are
// in flight and events wait; started again, it delivers every event, and
// only the attempts in flight at the kill may reach the core twice.
func TestQueueSurvivesKill9(t *testing.T) {
	var (
		mu      sync.Mutex
		hang    = true
		got     = map[string]int{}
		started = make(chan string, 100)
		release = make(chan struct{})
	)
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		h := hang
		got[key]++
		mu.Unlock()
		if h {
			started <- key
			<-release // the attempt is in flight when serve dies
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		started <- key
	}))
	defer core.Close()
	defer close(release)
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.yaml")
	writeFile(t, file, fmt.Sprintf(`sources:
  - {name: stripe-eu, provider: stripe, settings: {secrets: "${EU_SECRET}"}}
destinations:
  - {name: ledger, url: %q, delivery: queue, max_age: 1h, timeout: 1s, concurrency: 4}
routes:
  - {source: stripe-eu, to: [ledger]}
`, core.URL))
	env := func() map[string]string {
		return map[string]string{"WEBHOOKD_CONFIG": file, "WEBHOOKD_DATA_DIR": filepath.Join(dir, "data"), "EU_SECRET": euTestSecret,
			"WEBHOOKD_LEASE": "2s", "WEBHOOKD_STORE_TIMEOUT": "200ms", "WEBHOOKD_DISPATCH_TIMEOUT": "1s"}
	}
	s := startKillable(t, env())
	const n = 20
	for i := range n {
		body := []byte(fmt.Sprintf(`{"id":"evt_%d","object":"event","type":"invoice.paid","data":{"object":{}}}`, i))
		req, err := http.NewRequest(http.MethodPost, s.url+"/webhooks/stripe-eu", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", stripeSignature(t, euTestSecret, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	for range 4 { // concurrency 4: four attempts hang in the core
		<-started
	}
	s.kill()
	mu.Lock()
	inFlight := 0
	for _, c := range got {
		inFlight += c
	}
	hang = false
	mu.Unlock()

	startKillable(t, env())
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case key := <-started:
			mu.Lock()
			ok := !hang
			mu.Unlock()
			if ok {
				seen[key] = true
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("delivered %d of %d after the restart", len(seen), n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	extra := 0
	for key, c := range got {
		require.GreaterOrEqual(t, c, 1, key)
		extra += c - 1
	}
	require.LessOrEqual(t, extra, inFlight, "only the attempts in flight at the kill reach the core twice")
}
