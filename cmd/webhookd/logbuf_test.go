package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
