package main

// End-to-end tests of serve, replay, keys and capture together. serve runs
// as a real second process (this test binary re-executed as webhookd, see
// TestMain), because `keys` must work while another process holds the store
// open; replay runs in-process against it, keys as a third process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/capture"
)

// execMainEnv makes the test binary run webhookd's main instead of the tests.
const execMainEnv = "GO_WANT_WEBHOOKD_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(execMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

const testSecret = "whsec_e2e_secret"

// stripeFixtures is the repository's Stripe fixtures, the ones a newcomer
// replays; testFixtures are their event ids.
const stripeFixtures = "../../fixtures/stripe"

var testFixtures = map[string]string{
	"charge_refunded.json":               "evt_3Qx7Wbhkd0Refund0003",
	"checkout_session_completed.json":    "evt_1Qx7Wbhkd0Checkout04",
	"invoice_paid.json":                  "evt_1Qx7Wbhkd0InvPaid005",
	"payment_intent_payment_failed.json": "evt_3Qx7Wbhkd0PayFail0002",
	"payment_intent_succeeded.json":      "evt_3Qx7Wbhkd0PayInt0001",
}

// webhookdCmd is `webhookd args...` as a child process with only the given
// WEBHOOKD_* variables.
func webhookdCmd(t *testing.T, env map[string]string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WEBHOOKD_") && !strings.HasPrefix(kv, "GORACE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Under -race a process sleeps a second at exit (atexit_sleep_ms) so
	// that racing goroutines get reported; a child's report would reach its
	// stderr anyway, and a second per command adds up.
	cmd.Env = append(cmd.Env, execMainEnv+"=1", "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// execWebhookd runs `webhookd args...` to completion.
func execWebhookd(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := webhookdCmd(t, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("webhookd %v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// serveProcess is `webhookd serve` running as a child process.
type serveProcess struct {
	url string
	cmd *exec.Cmd
	log syncBuffer
}

func (s *serveProcess) logs() string { return s.log.String() }

// startServe starts serve on a free loopback port and waits for it to
// listen. It is stopped with SIGTERM when the test ends, and must exit 0.
func startServe(t *testing.T, env map[string]string) *serveProcess {
	t.Helper()
	env["WEBHOOKD_ADDR"] = "127.0.0.1:0"
	env["WEBHOOKD_ADMIN_ADDR"] = "127.0.0.1:0"
	env["WEBHOOKD_LOG_FORMAT"] = "json"
	s := &serveProcess{cmd: webhookdCmd(t, env, "serve")}
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.log.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "webhookd listening" {
				addr <- line.Addr
			}
		}
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		<-done
		err := s.cmd.Wait()
		if !t.Failed() {
			require.NoError(t, err, "serve exits 0 on SIGTERM; log:\n%s", s.logs())
		}
	})
	select {
	case a := <-addr:
		s.url = "http://" + a
	case <-done:
		t.Fatalf("serve exited before listening:\n%s", s.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen:\n%s", s.logs())
	}
	return s
}

// core is the core service stand-in: it records every forward by
// Idempotency-Key and answers 201.
type core struct {
	*httptest.Server
	mu       sync.Mutex
	forwards map[string][]forward
}

type forward struct {
	header http.Header
	body   []byte
}

func newCore(t *testing.T) *core {
	c := &core{forwards: map[string][]forward{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		c.forwards[key] = append(c.forwards[key], forward{r.Header.Clone(), body})
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *core) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.forwards[key])
}

func (c *core) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.forwards {
		n += len(f)
	}
	return n
}

func (c *core) get(key string, i int) forward {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.forwards[key][i]
}

// replayCmd runs `webhookd replay` in this process, with the Stripe secret
// set as the user would set it.
func replayCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	clearEnv(t)
	t.Setenv("WEBHOOKD_STRIPE_SECRETS", testSecret)
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"replay"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// fixtureLine returns the summary line of the fixture file name.
func fixtureLine(t *testing.T, summary, name string) string {
	t.Helper()
	for _, l := range strings.Split(summary, "\n") {
		if strings.Contains(l, string(filepath.Separator)+name+" ") {
			return l
		}
	}
	t.Fatalf("no line for %s in:\n%s", name, summary)
	return ""
}

func TestReplayServeKeysCaptureEndToEnd(t *testing.T) {
	c := newCore(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	captureDir := filepath.Join(t.TempDir(), "captures")
	srv := startServe(t, map[string]string{
		"WEBHOOKD_DATA_DIR":       dataDir,
		"WEBHOOKD_DOWNSTREAM_URL": c.URL,
		"WEBHOOKD_STRIPE_SECRETS": testSecret,
		"WEBHOOKD_CAPTURE_DIR":    captureDir,
	})
	keysEnv := map[string]string{"WEBHOOKD_DATA_DIR": dataDir}
	fixtures := stripeFixtures

	// Replaying every fixture forwards each exactly once.
	out, errOut, code := replayCmd(t, "--url", srv.url, fixtures)
	require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	for name, id := range testFixtures {
		require.Equal(t, 1, c.count("stripe:"+id), id)
		require.Regexp(t, `stripe\s+201$`, fixtureLine(t, out, name))
	}
	require.Equal(t, len(testFixtures), c.total())
	require.Contains(t, out, "5 requests (5 fixtures x 1, 1 at a time)")

	// A second replay forwards nothing new: every answer is replayed.
	out, _, code = replayCmd(t, "--url", srv.url, fixtures)
	require.Zero(t, code)
	require.Equal(t, len(testFixtures), c.total())
	for name := range testFixtures {
		require.Regexp(t, `stripe\s+201 replayed$`, fixtureLine(t, out, name))
	}
	require.Regexp(t, `(?m)^201\s+5\s+5\s`, out, "totals: 5 answers of 201, all replayed")

	// keys, as another process, while serve holds the store open.
	stdout, stderr, code := execWebhookd(t, keysEnv, "keys", "list")
	require.Zero(t, code, stderr)
	for _, id := range testFixtures {
		require.Regexp(t, `(?m)^stripe:`+id+`\s+COMPLETED\s+1\s+201\s`, stdout)
	}
	stdout, stderr, code = execWebhookd(t, keysEnv, "keys", "list", "--json", "--state", "COMPLETED", "--provider", "stripe", "--limit", "2")
	require.Zero(t, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2, "--limit 2:\n%s", stdout)
	for _, l := range lines {
		var v admin.RecordView
		require.NoError(t, json.Unmarshal([]byte(l), &v), "one JSON object per line")
		require.Equal(t, "stripe", v.Provider)
		require.Equal(t, "COMPLETED", v.State)
		require.Equal(t, 201, v.Status)
	}
	stdout, _, code = execWebhookd(t, keysEnv, "keys", "list", "--state", "FAILED")
	require.Zero(t, code)
	require.Empty(t, stdout)

	key := "stripe:" + testFixtures["payment_intent_payment_failed.json"]
	stdout, stderr, code = execWebhookd(t, keysEnv, "keys", "get", key, "--json")
	require.Zero(t, code, stderr)
	var v admin.RecordView
	require.NoError(t, json.Unmarshal([]byte(stdout), &v))
	require.Equal(t, key, v.Key)
	require.Equal(t, "COMPLETED", v.State)
	require.EqualValues(t, 1, v.Attempts)
	require.Equal(t, 201, v.Status)
	require.Equal(t, "application/json", v.Response.ContentType)
	require.NotNil(t, v.Response.Body)
	require.Equal(t, `{"ok":true}`, *v.Response.Body)
	require.Empty(t, v.LeaseUntil)
	updated, err := time.Parse(time.RFC3339, v.UpdatedAt)
	require.NoError(t, err, "RFC 3339, as the admin API")
	require.WithinDuration(t, time.Now(), updated, time.Minute)
	require.True(t, v.Request.Stored)

	stdout, _, code = execWebhookd(t, keysEnv, "keys", "get", key)
	require.Zero(t, code)
	require.Regexp(t, `(?m)^state\s+COMPLETED$`, stdout)
	require.Regexp(t, `(?m)^status\s+201$`, stdout)
	require.Contains(t, stdout, `{"ok":true}`)

	_, stderr, code = execWebhookd(t, keysEnv, "keys", "get", "stripe:evt_never_seen")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no record for stripe:evt_never_seen")

	// keys delete makes the next replay forward the event again.
	stdout, stderr, code = execWebhookd(t, keysEnv, "keys", "delete", key)
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "deleted "+key)
	out, _, code = replayCmd(t, "--url", srv.url, filepath.Join(fixtures, "payment_intent_payment_failed.json"))
	require.Zero(t, code)
	require.Regexp(t, `stripe\s+201$`, fixtureLine(t, out, "payment_intent_payment_failed.json"), "forwarded, not replayed")
	require.Equal(t, 2, c.count(key))
	require.Equal(t, len(testFixtures)+1, c.total())

	// Every verified delivery was captured, byte for byte, under a safe name.
	for name, id := range testFixtures {
		want, err := os.ReadFile(filepath.Join(fixtures, name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(captureDir, "stripe", capture.FileName(id)))
		require.NoError(t, err, "capture of %s", id)
		require.Equal(t, want, got, id)
	}

	// A captured file replays into a forward identical to the first one.
	capturedKey := "stripe:" + testFixtures["invoice_paid.json"]
	_, stderr, code = execWebhookd(t, keysEnv, "keys", "delete", capturedKey)
	require.Zero(t, code, stderr)
	capturedFile := filepath.Join(captureDir, "stripe", capture.FileName(testFixtures["invoice_paid.json"]))
	out, _, code = replayCmd(t, "--url", srv.url, capturedFile)
	require.Zero(t, code, out)
	require.Equal(t, 2, c.count(capturedKey))
	first, again := c.get(capturedKey, 0), c.get(capturedKey, 1)
	require.Equal(t, first.body, again.body)
	for _, h := range []string{"Content-Type", "Idempotency-Key", "Webhook-Provider", "Webhook-Event-Id", "Webhook-Event-Type"} {
		require.Equal(t, first.header.Get(h), again.header.Get(h), h)
	}

	// A duplicate storm of a fresh event reaches the core service once.
	stormKey := "stripe:" + testFixtures["payment_intent_succeeded.json"]
	_, stderr, code = execWebhookd(t, keysEnv, "keys", "delete", stormKey)
	require.Zero(t, code, stderr)
	out, _, code = replayCmd(t, "--url", srv.url, "--repeat", "8", "--concurrency", "8", filepath.Join(fixtures, "payment_intent_succeeded.json"))
	require.Zero(t, code, "2xx and 409 answers only:\n%s", out)
	require.Equal(t, 2, c.count(stormKey), "one new forward for eight deliveries")
	require.Contains(t, out, "8 requests (1 fixture x 8, 8 at a time)")
}

// TestQuickstart is the README's three terminals: sink, serve, replay of
// the shipped fixtures/stripe; then its rehearsal of a core service that
// is down: the sink answering 503 to fixtures given fresh ids, and the same
// ids forwarded once it answers 200 again.
func TestQuickstart(t *testing.T) {
	// startSink runs `webhookd sink` on addr until the returned stop.
	startSink := func(addr string, args ...string) (string, *syncBuffer, func()) {
		var out syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan string, 1)
		done := make(chan int, 1)
		go func() {
			done <- runSinkArgs(ctx, append([]string{"--addr", addr}, args...), &out, io.Discard, ready)
		}()
		select {
		case a := <-ready:
			return a, &out, func() { cancel(); require.Zero(t, <-done) }
		case code := <-done:
			t.Fatalf("sink exited %d", code)
		}
		return "", nil, nil
	}
	sinkAddr, sinkOut, stopSink := startSink("127.0.0.1:0")

	srv := startServe(t, map[string]string{
		"WEBHOOKD_DATA_DIR":       filepath.Join(t.TempDir(), "data"),
		"WEBHOOKD_DOWNSTREAM_URL": "http://" + sinkAddr + "/",
		"WEBHOOKD_STRIPE_SECRETS": testSecret,
	})
	shipped := filepath.Join("..", "..", "fixtures", "stripe")
	files, err := filepath.Glob(filepath.Join(shipped, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)

	out, errOut, code := replayCmd(t, "--url", srv.url, shipped)
	require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	stopSink()

	lines := func(b *syncBuffer) []string { return strings.Split(strings.TrimSpace(b.String()), "\n") }
	require.Len(t, lines(sinkOut), len(files), "one sink line per fixture:\n%s", sinkOut.String())
	for _, f := range files {
		var ev struct{ ID, Type string }
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(body, &ev))
		require.Contains(t, sinkOut.String(), "Idempotency-Key=stripe:"+ev.ID+" Webhook-Event-Type="+ev.Type)
	}

	// The rehearsal: the core service down. Fresh ids make the fixtures
	// new events; webhookd tries each three times (the first attempt and
	// WEBHOOKD_DISPATCH_RETRIES, 2), then answers 503 and releases it.
	_, downOut, stopSink := startSink(sinkAddr, "--status", "503")
	out, _, code = replayCmd(t, "--url", srv.url, "--id-suffix", "_r1", shipped)
	stopSink()
	require.Equal(t, 1, code, "503 answers fail the run:\n%s", out)
	require.Contains(t, out, fmt.Sprintf("503     %d", len(files)), out)
	require.Len(t, lines(downOut), 3*len(files), "three sink lines per event:\n%s", downOut.String())

	// Back up: the same ids are forwarded now, once; then replayed.
	_, upOut, stopSink := startSink(sinkAddr)
	out, _, code = replayCmd(t, "--url", srv.url, "--id-suffix", "_r1", shipped)
	require.Zero(t, code, out)
	out, _, code = replayCmd(t, "--url", srv.url, "--id-suffix", "_r1", shipped)
	stopSink()
	require.Zero(t, code, out)
	require.Contains(t, out, fmt.Sprintf("200     %d      %d", len(files), len(files)), "every answer replayed:\n%s", out)
	require.Len(t, lines(upOut), len(files), "each event forwarded once:\n%s", upOut.String())
	require.Contains(t, upOut.String(), "_r1 ")
}

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers (a
// child's log, the sink's goroutines) and the test. It is the package's one
// such buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
