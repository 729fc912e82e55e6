package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a throwaway Postgres server of one test's own, in its
// t.TempDir(), for tests that must stall, stop or fill the database: the
// shared server of WEBHOOKD_TEST_POSTGRES_DSN is never treated so. It is
// stopped (immediately, as a crash would) when the test ends. Its methods
// are called from the test's goroutine, but Pause, Resume and Stalled,
// which may be called from any (they report a failure with Errorf).
type Server struct {
	t    testing.TB
	bin  string // the directory of initdb, pg_ctl and postgres
	data string
	port int
	// asUser runs a command as the postgres OS user when the test runs as
	// root, since initdb and postgres refuse to run as root.
	asUser []string
}

// Start initialises and starts a Server on a free port, listening on
// 127.0.0.1 only, with trust authentication for the user postgres.
// settings are extra postgresql.conf lines ("fsync = off"). Without
// initdb (from /usr/lib/postgresql/*/bin or $PATH) it skips the test, or
// fails it under CI=true, like DSN.
func Start(t testing.TB, settings ...string) *Server {
	t.Helper()
	bin := serverBin(t, os.Getenv, findBin)
	s := &Server{t: t, bin: bin}
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// initdb refuses root: the cluster belongs to the postgres user,
		// who must reach it through the test's own temporary directories.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and %v: the throwaway Postgres runs as the postgres OS user", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	s.data = filepath.Join(dir, "data")
	s.run("initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	s.configure(append([]string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = ''",
		"max_connections = 40",
		"shared_buffers = '32MB'",
	}, settings...)...)
	t.Cleanup(s.stop)
	// The free port may be taken again before the server binds it (by a
	// parallel test's server): then it starts on another.
	for attempt := 1; ; attempt++ {
		s.port = freePort(t)
		s.configure("port = " + strconv.Itoa(s.port)) // the last setting of a name wins
		out, err := s.command("pg_ctl", "-D", s.data, "-l", filepath.Join(s.data, "server.log"), "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			return s
		}
		log, _ := os.ReadFile(filepath.Join(s.data, "server.log"))
		if attempt == 3 || !strings.Contains(string(log), "could not bind") {
			t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
		}
	}
}

// configure appends lines to the server's postgresql.conf.
func (s *Server) configure(lines ...string) {
	s.t.Helper()
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	_, err = f.WriteString("\n" + strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

// DSN is the connection string of the server's postgres database.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Pause stops every process of the server with SIGSTOP, the postmaster
// first so that it forks no new backend: a server that hangs, as one
// whose host is frozen or swapping does. Connections are still accepted
// by the kernel, and bytes sent are buffered, but nothing answers.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
}

// Resume lets a paused server run on with SIGCONT.
func (s *Server) Resume() {
	s.t.Helper()
	s.signal(syscall.SIGCONT)
}

// Stalled pauses the server for d, then resumes it, and returns when it
// has; the server is resumed also if the test fails meanwhile.
func (s *Server) Stalled(d time.Duration) {
	s.t.Helper()
	s.Pause()
	defer s.Resume()
	<-time.After(d)
}

// signal sends sig to the postmaster, then to its children.
func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	pm, err := s.postmaster()
	if err != nil {
		s.t.Error(err)
		return
	}
	pids := append([]int{pm}, children(pm)...)
	if sig == syscall.SIGCONT {
		// Children first: the postmaster then finds them running.
		pids = append(pids[1:], pm)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.t.Errorf("signal %v to postgres process %d: %v", sig, pid, err)
		}
	}
}

// postmaster is the server's main process, from the first line of its
// postmaster.pid.
func (s *Server) postmaster() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.data, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("throwaway postgres is not running: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name, in parentheses, may hold spaces: the fields
		// after its closing parenthesis are state, then the parent's pid.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	sort.Ints(out)
	return out
}

// Stop stops the server as a crash would (pg_ctl's immediate mode): its
// connections break, and new ones are refused until Restart.
func (s *Server) Stop() {
	s.t.Helper()
	s.stop()
}

// Restart starts a stopped server again, on the same port and data, and
// returns once it takes connections (after its crash recovery).
func (s *Server) Restart() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.data, "-l", filepath.Join(s.data, "server.log"), "-w", "-t", "60", "start")
}

// stop resumes the server, should the test have left it paused, and
// stops it as a crash would.
func (s *Server) stop() {
	if _, err := s.postmaster(); err != nil {
		return
	}
	s.signal(syscall.SIGCONT)
	cmd := s.command("pg_ctl", "-D", s.data, "-m", "immediate", "-w", "-t", "30", "stop")
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Errorf("stop throwaway postgres: %v: %s", err, out)
	}
}

// Conn connects to the server's postgres database, for a test's own
// checks; it is closed when the test ends.
func (s *Server) Conn() *pgx.Conn {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (s *Server) run(name string, args ...string) {
	s.t.Helper()
	if out, err := s.command(name, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.data, "server.log"))
		s.t.Fatalf("%s: %v\n%s\n%s", name, err, out, log)
	}
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.asUser...), filepath.Join(s.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = os.TempDir() // the postgres user may not enter the test's working directory
	return cmd
}

// serverBin is find's directory of the server binaries; without one it
// skips the test, or fails it under CI=true.
func serverBin(t skipper, getenv func(string) string, find func() (string, error)) string {
	t.Helper()
	bin, err := find()
	if err == nil {
		return bin
	}
	if getenv("CI") == "true" {
		t.Fatal(fmt.Sprintf("a throwaway Postgres is needed and %v: CI must have the server binaries", err))
		return ""
	}
	t.Skip(fmt.Sprintf("a throwaway Postgres is needed and %v; CI runs these tests", err))
	return ""
}

// findBin is the directory holding initdb: the newest
// /usr/lib/postgresql/<version>/bin (Debian's layout, where pg_ctl is not
// on $PATH), else the one $PATH finds.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	p, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("initdb is not installed (neither /usr/lib/postgresql/*/bin nor $PATH has it)")
	}
	p, err = filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Dir(p), nil
}

// version is the major version in a /usr/lib/postgresql/<version>/bin path.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// freePort is a TCP port nobody listened on a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
