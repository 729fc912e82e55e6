package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// env is what the subcommands need from outside: how to start this program
// again as a helper server, and the webhookd binary.
type env struct {
	// self returns a command that runs this program with args.
	self func(args ...string) *exec.Cmd
	// webhookd is the webhookd binary's path.
	webhookd string
	// before is a second webhookd binary (compare -before): the designs
	// named with beforeSuffix run it, so that a change is measured
	// against its baseline in one run, the rounds interleaved.
	before string
	// tmp holds data directories and logs.
	tmp string
}

// proc is a system under test running as a subprocess.
type proc struct {
	cmd  *exec.Cmd
	addr string
	log  string // its stderr, in a file
	// cpu lists its processes for CPU accounting: itself, then any
	// server it uses (see cpu.go).
	cpu    []cpuSource
	exited chan struct{}
	err    error
	// peers are more nodes of the same design, on the same shared store:
	// url hands deliveries to p and its peers in turn.
	peers []*proc
	turn  atomic.Uint64
}

// freeAddr returns a loopback address nothing listens on now. Choosing the
// port here rather than letting the child pick one means the parent needs
// no log parsing to find it, and a restart can keep it.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// startProc starts cmd, which must listen on addr, with its output in a
// log file, and waits until addr accepts connections.
func startProc(cmd *exec.Cmd, addr, logPath string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, addr: addr, log: logPath, exited: make(chan struct{})}
	p.cpu = []cpuSource{pidSource(cmd.Process.Pid)}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before listening (%v); its log: %s", filepath.Base(cmd.Path), p.err, tail(logPath))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("%s not listening on %s after 30s; its log: %s", filepath.Base(cmd.Path), addr, tail(logPath))
		}
	}
}

// url is where p takes Stripe deliveries: p's own address, or, with
// peers, each node's in turn.
func (p *proc) url() string {
	if len(p.peers) == 0 {
		return "http://" + p.addr + webhookPath
	}
	n := p.turn.Add(1) % uint64(len(p.peers)+1)
	if n == 0 {
		return "http://" + p.addr + webhookPath
	}
	return p.peers[n-1].url()
}

// stop asks p to stop (SIGTERM) and waits, killing it after a while.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.kill()
	}
}

// kill ends p at once (SIGKILL) and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// tail returns the end of a log file, for error messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// webhookdEnv returns the environment of a webhookd child: this process's,
// without any WEBHOOKD_ variable of its own, plus vars.
func webhookdEnv(vars ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WEBHOOKD_") {
			out = append(out, kv)
		}
	}
	return append(out, vars...)
}

// startWebhookd runs `webhookd serve` on addr with the data dir, the stub
// as its downstream and extra WEBHOOKD_ variables.
func (e *env) startWebhookd(addr, dataDir, downstream, logPath string, extra ...string) (*proc, error) {
	cmd := exec.Command(e.webhookd, "serve")
	cmd.Env = webhookdEnv(append([]string{
		"WEBHOOKD_ADDR=" + addr,
		// Several webhookd run at once in a benchmark: no admin listener,
		// whose default port they would share.
		"WEBHOOKD_ADMIN_ADDR=",
		"WEBHOOKD_DATA_DIR=" + dataDir,
		"WEBHOOKD_DOWNSTREAM_URL=" + downstream,
		"WEBHOOKD_STRIPE_SECRETS=" + benchSecret,
	}, extra...)...)
	return startProc(cmd, addr, logPath)
}

// pgSchema creates a fresh schema for one run and returns the DSN that
// selects it and a function that drops it, as the repository's Postgres
// tests do (a search_path parameter on the DSN).
func pgSchema(ctx context.Context, dsn string) (string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "webhookbench_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		return "", nil, err
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
	}
	return withSearchPath(dsn, schema), drop, nil
}

// withSearchPath adds search_path to a URL or keyword/value DSN.
func withSearchPath(dsn, schema string) string { return withParam(dsn, "search_path", schema) }

// withParam adds key=value to a URL or keyword/value DSN; value must need
// no quoting or escaping.
func withParam(dsn, key, value string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return dsn + " " + key + "=" + value
	case strings.Contains(dsn, "?"):
		return dsn + "&" + key + "=" + value
	default:
		return dsn + "?" + key + "=" + value
	}
}

// errSkipped marks a variant that cannot run here (no DSN, no Redis).
var errSkipped = errors.New("skipped")

// errNoPostgres skips a Postgres variant: it names every way to give the
// DSN, the tests' variable among them (bench_test.go reads
// WEBHOOKD_TEST_POSTGRES_DSN, as every Postgres test of webhookd does).
var errNoPostgres = fmt.Errorf("%w: no Postgres DSN (set WEBHOOKD_TEST_POSTGRES_DSN for the tests; -postgres-dsn or WEBHOOKBENCH_POSTGRES_DSN for a run)", errSkipped)
