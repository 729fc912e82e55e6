package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
)

// These tests run webhookd as a child process (webhookdCmd) and stop it
// with real signals.

const testStripeSecret = "whsec_shutdown_test_secret"

// process is a running webhookd.
type process struct {
	t       *testing.T
	cmd     *exec.Cmd
	addr    string
	dataDir string
	log     syncBuffer
	lines   chan map[string]any
	exited  chan struct{}
	err     error
}

// start runs the binary with a JSON log and the given extra variables, and
// waits until it listens.
func start(t *testing.T, downstream string, env ...string) *process {
	t.Helper()
	p := &process{t: t, dataDir: t.TempDir(), lines: make(chan map[string]any, 100), exited: make(chan struct{})}
	vars := map[string]string{
		"WEBHOOKD_ADDR":           "127.0.0.1:0",
		"WEBHOOKD_ADMIN_ADDR":     "127.0.0.1:0",
		"WEBHOOKD_DATA_DIR":       p.dataDir,
		"WEBHOOKD_DOWNSTREAM_URL": downstream,
		"WEBHOOKD_STRIPE_SECRETS": testStripeSecret,
		"WEBHOOKD_LOG_FORMAT":     "json",
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	p.cmd = webhookdCmd(t, vars, "serve")
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.log.Write(append(sc.Bytes(), '\n'))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case p.lines <- m:
				default:
				}
			}
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	p.addr = p.waitLog("webhookd listening")["addr"].(string)
	return p
}

// waitLog waits for the first log record with message msg.
func (p *process) waitLog(msg string) map[string]any {
	p.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case m := <-p.lines:
			if m["msg"] == msg {
				return m
			}
		case <-p.exited:
			p.t.Fatalf("webhookd exited before logging %q: %v\n%s", msg, p.err, p.logs())
		case <-deadline:
			p.t.Fatalf("no %q in the log:\n%s", msg, p.logs())
		}
	}
}

func (p *process) logs() string { return p.log.String() }

func (p *process) signal(sig os.Signal) {
	require.NoError(p.t, p.cmd.Process.Signal(sig))
}

// exitCode waits for the process to end and returns its status.
func (p *process) exitCode(within time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		p.t.Fatalf("webhookd still running after %s:\n%s", within, p.logs())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(p.t, p.err)
	return 0
}

// stripeEvent posts a signed Stripe event and reports the answer.
type answer struct {
	status int
	header http.Header
	body   string
	err    error
}

func (p *process) deliver(id string) answer {
	body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"charge.succeeded","data":{"object":{"id":"ch_1"}}}`, id)
	req, err := http.NewRequest(http.MethodPost, "http://"+p.addr+"/webhooks/stripe", bytes.NewReader(body))
	require.NoError(p.t, err)
	req.Header.Set("Stripe-Signature", stripeSignature(p.t, testStripeSecret, time.Now(), body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// held is a core service that holds each request until released (or until
// the request is abandoned), and says when one has arrived.
type held struct {
	*httptest.Server
	arrived chan struct{}
	release chan struct{}
}

func newHeld(t *testing.T) *held {
	h := &held{arrived: make(chan struct{}, 10), release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.arrived <- struct{}{}
		select {
		case <-h.release:
			w.WriteHeader(http.StatusCreated)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		h.Close()
	})
	return h
}

func (h *held) waitArrival(t *testing.T) {
	t.Helper()
	select {
	case <-h.arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("the forward never reached the core service")
	}
}

// state opens the stopped process's store and reads key's state (0 when
// absent).
func (p *process) state(key string) dedupe.State {
	p.t.Helper()
	s, err := lmdb.Open(p.dataDir, lmdb.Options{Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(p.t, err)
	defer s.Close()
	rec, err := s.Get(context.Background(), key)
	if errors.Is(err, dedupe.ErrNotFound) {
		return 0
	}
	require.NoError(p.t, err)
	return rec.State
}

func TestSIGTERMDuringASlowForwardStillAnswersAndExitsZero(t *testing.T) {
	core := newHeld(t)
	p := start(t, core.URL)
	done := make(chan answer, 1)
	go func() { done <- p.deliver("evt_slow") }()
	core.waitArrival(t)

	p.signal(syscall.SIGTERM)
	p.waitLog("shutting down: draining in-flight deliveries")
	// No new connections are accepted while the delivery drains.
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 5*time.Second, 20*time.Millisecond)

	close(core.release)
	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, http.StatusCreated, a.status, "the provider got the core service's answer")
	require.Zero(t, p.exitCode(20*time.Second), p.logs())
	require.Contains(t, p.logs(), `"msg":"webhookd stopped"`)
	require.Equal(t, dedupe.Completed, p.state("stripe:evt_slow"))
}

func TestSIGTERMGraceRunsOutReleasesTheKeyAndAnswers503(t *testing.T) {
	core := newHeld(t)
	p := start(t, core.URL, "WEBHOOKD_SHUTDOWN_GRACE=300ms", "WEBHOOKD_DISPATCH_TIMEOUT=40s", "WEBHOOKD_LEASE=60s")
	done := make(chan answer, 1)
	go func() { done <- p.deliver("evt_stuck") }()
	core.waitArrival(t)

	start := time.Now()
	p.signal(syscall.SIGTERM)
	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.NotEmpty(t, a.header.Get("Retry-After"))
	require.Contains(t, a.body, "shutting down")
	require.Zero(t, p.exitCode(20*time.Second), p.logs())
	require.Less(t, time.Since(start), 15*time.Second, "the 40s dispatch timeout was not waited out")
	require.Contains(t, p.logs(), "shutdown grace period over")
	require.Zero(t, p.state("stripe:evt_stuck"), "the key was released: the provider's retry is forwarded afresh")
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	core := newHeld(t)
	p := start(t, core.URL, "WEBHOOKD_SHUTDOWN_GRACE=50s", "WEBHOOKD_DISPATCH_TIMEOUT=50s", "WEBHOOKD_LEASE=70s")
	go p.deliver("evt_forever")
	core.waitArrival(t)

	p.signal(syscall.SIGTERM)
	p.waitLog("shutting down: draining in-flight deliveries")
	p.signal(syscall.SIGINT)
	require.Equal(t, 128+int(syscall.SIGINT), p.exitCode(10*time.Second))
	require.Contains(t, p.logs(), "second signal (interrupt): exiting at once")
}

func TestIdleServerStopsOnSIGINT(t *testing.T) {
	p := start(t, "http://127.0.0.1:1/")
	resp, err := http.Get("http://" + p.addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	p.signal(syscall.SIGINT)
	require.Zero(t, p.exitCode(10*time.Second), p.logs())
}
