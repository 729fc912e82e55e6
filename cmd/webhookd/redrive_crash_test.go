package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// killableServe is `webhookd serve` as a child process that the test ends
// with SIGKILL, as a crash would.
type killableServe struct {
	url, adminURL string
	kill          func()
}

// startKillable starts serve with both listeners on free loopback ports
// and waits until both listen.
func startKillable(t *testing.T, env map[string]string) *killableServe {
	t.Helper()
	env["WEBHOOKD_ADDR"] = "127.0.0.1:0"
	env["WEBHOOKD_ADMIN_ADDR"] = "127.0.0.1:0"
	env["WEBHOOKD_LOG_FORMAT"] = "json"
	cmd := webhookdCmd(t, env, "serve")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var log syncBuffer
	addrs := make(chan [2]string, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && (line.Msg == "webhookd listening" || line.Msg == "admin listening") {
				addrs <- [2]string{line.Msg, "http://" + line.Addr}
			}
		}
	}()
	var once sync.Once
	s := &killableServe{kill: func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-done
			_ = cmd.Wait()
		})
	}}
	t.Cleanup(s.kill)
	for s.url == "" || s.adminURL == "" {
		select {
		case a := <-addrs:
			if a[0] == "admin listening" {
				s.adminURL = a[1]
			} else {
				s.url = a[1]
			}
		case <-done:
			t.Fatalf("serve exited before listening:\n%s", log.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("serve did not listen:\n%s", log.String())
		}
	}
	return s
}

// A process killed in the middle of a redrive of a COMPLETED event leaves
// the record as it was: the provider's retry after the restart, and after
// the redrive's lease has passed, is replayed the stored answer, never
// forwarded again, and the record keeps its retention (docs/redrive.md).
func TestKillMidRedriveKeepsTheRecord(t *testing.T) {
	var hang atomic.Bool
	forwards := make(chan string, 8)
	release := make(chan struct{})
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		forwards <- r.Header.Get("Idempotency-Key")
		if hang.Load() {
			select { // the core is slow: the redrive waits for it
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(func() { close(release); core.Close() })

	dataDir := filepath.Join(t.TempDir(), "data")
	env := func() map[string]string {
		return map[string]string{
			"WEBHOOKD_DATA_DIR":         dataDir,
			"WEBHOOKD_DOWNSTREAM_URL":   core.URL,
			"WEBHOOKD_STRIPE_SECRETS":   testSecret,
			"WEBHOOKD_LEASE":            "2s",
			"WEBHOOKD_DISPATCH_TIMEOUT": "1s",
		}
	}
	fixture := filepath.Join(stripeFixtures, "invoice_paid.json")
	key := "stripe:" + testFixtures["invoice_paid.json"]

	srv := startKillable(t, env())
	out, errOut, code := replayCmd(t, "--url", srv.url, fixture)
	require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Regexp(t, `stripe\s+201$`, fixtureLine(t, out, "invoice_paid.json"))
	require.Equal(t, key, <-forwards)
	before := keysGetJSON(t, dataDir, key)

	hang.Store(true)
	go func() {
		resp, err := http.Post(srv.adminURL+"/api/records/"+key+"/redrive", "", nil)
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case got := <-forwards:
		require.Equal(t, key, got, "the redrive reaches the core")
	case <-time.After(30 * time.Second):
		t.Fatal("the redrive never reached the core")
	}
	srv.kill()
	hang.Store(false)

	srv = startKillable(t, env())
	retry := func(why string) {
		t.Helper()
		out, _, code := replayCmd(t, "--url", srv.url, fixture)
		require.Zero(t, code, why)
		require.Regexp(t, `stripe\s+201 replayed$`, fixtureLine(t, out, "invoice_paid.json"), why)
	}
	retry("a retry during the dead redrive's lease")
	time.Sleep(2500 * time.Millisecond)
	retry("a retry after the dead redrive's lease")
	select {
	case got := <-forwards:
		t.Fatalf("forwarded %s again after the crash", got)
	default:
	}

	after := keysGetJSON(t, dataDir, key)
	require.Equal(t, "COMPLETED", after["state"])
	for _, f := range []string{"state", "status", "attempts", "updated_at", "expires_at"} {
		require.Equal(t, before[f], after[f], f)
	}
	expires, err := time.Parse(time.RFC3339, after["expires_at"].(string))
	require.NoError(t, err)
	require.Greater(t, time.Until(expires), 24*time.Hour, "kept for its retention")
}

// keysGetJSON is `webhookd keys get key --json`, decoded.
func keysGetJSON(t *testing.T, dataDir, key string) map[string]any {
	t.Helper()
	stdout, stderr, code := execWebhookd(t, map[string]string{"WEBHOOKD_DATA_DIR": dataDir}, "keys", "get", key, "--json")
	require.Zero(t, code, stderr)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
	return v
}
