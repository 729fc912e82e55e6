package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/internal/logbuf"
)

// TestLogLinesReachStderrBeforeExit: serve's log goes through a buffered
// writer (internal/logbuf), and every line of it is on stderr when the
// process has exited, here on the error path: serve warns about 1,000
// unknown variables (about 150 KB of log), then fails to listen.
//
// stderr is a pipe that the test leaves unread until serve has exited, or
// has had ample time to: a pipe holds 64 KiB, so most of the log is still
// in serve's buffer when it returns. A serve that exited without flushing
// would lose it; one that flushes waits for this read.
func TestLogLinesReachStderrBeforeExit(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	const unknown = 1000
	env := map[string]string{
		"WEBHOOKD_ADDR":           taken.Addr().String(),
		"WEBHOOKD_DATA_DIR":       t.TempDir(),
		"WEBHOOKD_DOWNSTREAM_URL": "http://127.0.0.1:1/",
		"WEBHOOKD_LOG_FORMAT":     "json",
		// Off, so that the listen that fails is WEBHOOKD_ADDR's whatever
		// else runs on this machine (a webhookd on the default 8081).
		"WEBHOOKD_ADMIN_ADDR": "",
	}
	for i := range unknown {
		env[fmt.Sprintf("WEBHOOKD_UNKNOWN_%04d", i)] = "x"
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cmd := webhookdCmd(t, env, "serve")
	cmd.Stderr = w
	require.NoError(t, cmd.Start())
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waitErr error
	select {
	case waitErr = <-exited:
		exited <- waitErr
	case <-time.After(3 * time.Second):
	}
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	waitErr = <-exited
	var ee *exec.ExitError
	require.ErrorAs(t, waitErr, &ee)
	require.Equal(t, 1, ee.ExitCode(), "%s", out)

	var warnings int
	var last struct{ Level, Msg, Error string }
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	for _, l := range lines {
		require.NoError(t, json.Unmarshal(l, &last), "a whole JSON line: %q", l)
		if last.Level == "WARN" && bytes.Contains(l, []byte("is not a webhookd variable")) {
			warnings++
		}
	}
	require.Equal(t, unknown, warnings, "every warning is on stderr")
	require.Equal(t, "webhookd stopped", last.Msg, "and so is the last line")
	require.Contains(t, last.Error, "WEBHOOKD_ADDR")
}

// heldWriter blocks every Write until release is closed, as a stderr whose
// reader is slow does, and keeps what it was given.
type heldWriter struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (h *heldWriter) Write(p []byte) (int, error) {
	<-h.release
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got.Write(p)
}

// TestExitFlushesFirst: the process's exit (flushThenExit, which main,
// the second signal and every status use) writes every line accepted
// before it, and only then exits.
func TestExitFlushesFirst(t *testing.T) {
	h := &heldWriter{release: make(chan struct{})}
	w := logbuf.New(h, 0)
	exited := make(chan int, 1)
	exit := flushThenExit(w, func(code int) { exited <- code })
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	go exit(3)
	require.Never(t, func() bool { return len(exited) > 0 }, 100*time.Millisecond, 5*time.Millisecond,
		"no exit while lines are still waiting")
	close(h.release)
	select {
	case code := <-exited:
		require.Equal(t, 3, code)
	case <-time.After(5 * time.Second):
		t.Fatal("exit never came")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, 100, strings.Count(h.got.String(), "\n"), "every line written before the exit")
	require.True(t, strings.HasSuffix(h.got.String(), "line 99\n"))
}
