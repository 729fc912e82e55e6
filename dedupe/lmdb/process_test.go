package lmdb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// Tests that need a second process re-run this test binary as a helper:
// TestHelperProcess does what helperRole says on helperDir, and is a no-op
// in a normal run.
const (
	helperRole = "DEDUPE_TEST_HELPER_ROLE"
	helperDir  = "DEDUPE_TEST_HELPER_DIR"
)

func TestHelperProcess(t *testing.T) {
	role, dir := os.Getenv(helperRole), os.Getenv(helperDir)
	if role == "" {
		return
	}
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, MapSize: 1 << 20, NoSync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	switch role {
	case "hold-open":
		// Keeps the environment open, as webhookd serve would, until its
		// stdin is closed.
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "hold-reader":
		// Opens a read transaction and never ends it: the test kills
		// this process with SIGKILL, as a crash would.
		txn, err := s.env.BeginTxn(nil, mdb.Readonly)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		txn.Abort()
	case "grow":
		// Writes well past the 1 MiB map this process started with.
		body := bytes.Repeat([]byte("g"), 32<<10)
		for i := 0; i < 64; i++ {
			l, _, err := s.Claim(ctx, fmt.Sprintf("child:%02d", i), "fp", nil)
			if err == nil {
				err = s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		fmt.Println(s.MapSize())
	default:
		fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
		os.Exit(3)
	}
	s.Close()
	os.Exit(0)
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startHelper runs role on dir in a child process and waits for its first
// line of output.
func startHelper(t *testing.T, role, dir string) (*helper, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperRole+"="+role, helperDir+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &helper{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	})
	line, err := h.out.ReadString('\n')
	require.NoError(t, err, "helper %s did not start", role)
	return h, strings.TrimSpace(line)
}

// stop closes the helper's stdin and waits for it to exit cleanly.
func (h *helper) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, h.stdin.Close())
	require.NoError(t, h.cmd.Wait())
}

// readerPIDs lists the processes holding reader slots in env.
func readerPIDs(t *testing.T, env *mdb.Env) map[int]bool {
	t.Helper()
	pids := map[int]bool{}
	require.NoError(t, env.ReaderList(func(line string) error {
		for _, l := range strings.Split(line, "\n") {
			f := strings.Fields(l)
			if len(f) > 0 {
				if pid, err := strconv.Atoi(f[0]); err == nil {
					pids[pid] = true
				}
			}
		}
		return nil
	}))
	return pids
}

// rawReaderPIDs opens dir without any reader check and lists its readers.
func rawReaderPIDs(t *testing.T, dir string) map[int]bool {
	t.Helper()
	env, err := mdb.NewEnv()
	require.NoError(t, err)
	defer env.Close()
	require.NoError(t, env.SetMaxDBs(maxDBs))
	require.NoError(t, env.Open(dir, mdb.Readonly, 0o640))
	return readerPIDs(t, env)
}

func TestStaleReaderSlotsClearedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, newClock())
	require.NoError(t, s.Close())

	// A long-running process keeps the environment open (were none to,
	// the next opener would reset the whole reader table anyway).
	holder, _ := startHelper(t, "hold-open", dir)
	// A second process crashes inside a read transaction.
	crashed, _ := startHelper(t, "hold-reader", dir)
	pid := crashed.cmd.Process.Pid
	require.NoError(t, crashed.cmd.Process.Kill())
	_ = crashed.cmd.Wait()
	require.True(t, rawReaderPIDs(t, dir)[pid], "the killed process's slot is left behind")

	s = openTest(t, dir, newClock())
	pids := readerPIDs(t, s.env)
	require.False(t, pids[pid], "Open clears the dead process's slot")
	// The slots of live processes are kept.
	l, _, err := s.Claim(ctx, "after:crash", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	holder.stop(t)
}

func TestPrunerClearsStaleReaderSlots(t *testing.T) {
	dir := t.TempDir()
	// This process is the long-running server; a keys command crashes
	// beside it and leaves a slot that only a periodic check can free.
	s := openTest(t, dir, newClock(), func(o *Options) { o.PruneInterval = 5 * time.Millisecond })
	crashed, _ := startHelper(t, "hold-reader", dir)
	pid := crashed.cmd.Process.Pid
	require.True(t, readerPIDs(t, s.env)[pid])
	require.NoError(t, crashed.cmd.Process.Kill())
	_ = crashed.cmd.Wait()
	require.Eventually(t, func() bool { return !readerPIDs(t, s.env)[pid] }, 5*time.Second, 5*time.Millisecond)
}

func TestAnotherProcessGrowsTheMap(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s := openTest(t, dir, c, func(o *Options) { o.MapSize = 1 << 20; o.NoSync = true })
	l, _, err := s.Claim(ctx, "parent:before", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))

	child, out := startHelper(t, "grow", dir)
	require.NoError(t, child.cmd.Wait())
	childMap, err := strconv.ParseInt(out, 10, 64)
	require.NoError(t, err)
	require.Greater(t, childMap, int64(2<<20), "the child grew the map")

	// This process reads what the child wrote beyond its own map, and
	// writes on.
	body := bytes.Repeat([]byte("g"), 32<<10)
	for i := 0; i < 64; i++ {
		rec, err := s.Get(ctx, fmt.Sprintf("child:%02d", i))
		require.NoError(t, err)
		require.Equal(t, body, rec.Response.Body)
	}
	require.GreaterOrEqual(t, s.MapSize(), childMap, "the grown size is adopted")
	l, _, err = s.Claim(ctx, "parent:after", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200, Body: body}))
	checkConsistent(t, s)
}
