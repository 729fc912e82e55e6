package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// The CPU accounting of compare: what each design's processes spent over
// the timed load, read from Linux's /proc (elsewhere the figures are
// reported as unknown). A design's processes are its server subprocess
// plus, where the design has one, the server it talks to: redis-server
// (its pid from INFO server) for the Redis design, and for the Postgres
// design the Postgres backends serving webhookd's own connections (found
// in pg_stat_activity by an application_name unique to the run). The
// Postgres server's shared processes (WAL writer, checkpointer, background
// writer) are not counted: other clients of the same server use them too,
// so their time cannot be split honestly.

// errNoCPU marks a CPU figure this machine cannot give (no /proc).
var errNoCPU = errors.New("CPU time unavailable")

var (
	tickOnce sync.Once
	tick     time.Duration
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat and of
// /proc/stat: 1/USER_HZ, what sysconf(_SC_CLK_TCK) returns. libc reads it
// from the auxiliary vector (AT_CLKTCK), and so does this, without cgo;
// 100 Hz, Linux's value on every architecture Go runs on, if it cannot.
func clockTick() time.Duration {
	tickOnce.Do(func() {
		tick = 10 * time.Millisecond
		b, err := os.ReadFile("/proc/self/auxv")
		if err != nil {
			return
		}
		const atClkTck = 17
		for ; len(b) >= 16; b = b[16:] {
			k, v := binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint64(b[8:])
			if k == atClkTck && v > 0 {
				tick = time.Second / time.Duration(v)
				return
			}
		}
	})
	return tick
}

// procCPU returns the user plus system CPU time process pid has used, all
// its threads, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errNoCPU, err)
	}
	ticks, err := statTicks(b)
	if err != nil {
		return 0, fmt.Errorf("%w: /proc/%d/stat: %v", errNoCPU, pid, err)
	}
	return time.Duration(ticks) * clockTick(), nil
}

// statTicks returns utime + stime, in clock ticks, from the text of a
// /proc/<pid>/stat file (proc(5)).
func statTicks(b []byte) (uint64, error) {
	// The command name (field 2) is in parentheses and may hold spaces or
	// parentheses itself: the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields, want at least 15", len(f)+2)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return ut + st, nil
}

// selfCPU is this process's user plus system CPU time: the load client and
// the stub, which share it.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("%w: %v", errNoCPU, err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// machineBusy is the CPU time every core of the machine has spent on
// anything but idling or waiting for I/O, from /proc/stat.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errNoCPU, err)
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("%w: /proc/stat: unexpected first line", errNoCPU)
	}
	var busy uint64
	// user nice system idle iowait irq softirq steal; guest and guest_nice
	// (fields 9 and 10) are already inside user and nice.
	for i, s := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: /proc/stat: %v", errNoCPU, err)
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * clockTick(), nil
}

// cpuSource lists the processes of one part of a design, by pid.
type cpuSource func(ctx context.Context) ([]int, error)

// cpuSnapshot is the CPU time of each process of a design's parts, and of
// this process and the machine, at one moment.
type cpuSnapshot struct {
	at      time.Time
	procs   []map[int]time.Duration // one per source: pid → CPU time
	self    time.Duration
	machine time.Duration
	err     error // the first error; the snapshot is then unusable
}

// takeCPU reads the CPU time of every process the sources list.
func takeCPU(ctx context.Context, sources []cpuSource) cpuSnapshot {
	s := cpuSnapshot{at: time.Now(), procs: make([]map[int]time.Duration, len(sources))}
	for i, src := range sources {
		pids, err := src(ctx)
		if err != nil {
			s.err = err
			return s
		}
		s.procs[i] = make(map[int]time.Duration, len(pids))
		for _, pid := range pids {
			if s.procs[i][pid], err = procCPU(pid); err != nil {
				s.err = err
				return s
			}
		}
	}
	if s.self, s.err = selfCPU(); s.err != nil {
		return s
	}
	s.machine, s.err = machineBusy()
	return s
}

// cpuUse is CPU time spent over a window.
type cpuUse struct {
	wall time.Duration
	// parts is each source's CPU time: [0] the design's own server, then
	// the server it uses (redis-server, Postgres backends), if any.
	parts []time.Duration
	// self is the load client's and the stub's; machine everything's.
	self, machine time.Duration
}

// server is the design's CPU time: all its parts.
func (u cpuUse) server() time.Duration {
	var t time.Duration
	for _, p := range u.parts {
		t += p
	}
	return t
}

// cores turns a CPU time over the window into cores kept busy.
func (u cpuUse) cores(t time.Duration) float64 {
	if u.wall <= 0 {
		return 0
	}
	return t.Seconds() / u.wall.Seconds()
}

// cpuBetween is what was spent from a to b. A process found at b but not
// at a (a Postgres backend opened during the window) counts from zero: it
// started inside the window. One gone by b (a backend closed during it) is
// lost, which undercounts; webhookd's pool keeps its connections open.
func cpuBetween(a, b cpuSnapshot) (cpuUse, error) {
	if err := errors.Join(a.err, b.err); err != nil {
		return cpuUse{}, err
	}
	u := cpuUse{wall: b.at.Sub(a.at), parts: make([]time.Duration, len(b.procs)),
		self: b.self - a.self, machine: b.machine - a.machine}
	for i, m := range b.procs {
		for pid, t := range m {
			u.parts[i] += t - a.procs[i][pid]
		}
	}
	return u, nil
}

// pidSource is one process.
func pidSource(pid int) cpuSource {
	return func(context.Context) ([]int, error) { return []int{pid}, nil }
}

// redisServerSource is the redis-server process at addr, from the
// process_id of INFO server. It must run on this machine, in this pid
// namespace, for /proc to show it.
func redisServerSource(rdb *redis.Client) cpuSource {
	var pid int
	return func(ctx context.Context) ([]int, error) {
		if pid != 0 {
			return []int{pid}, nil
		}
		info, err := rdb.Info(ctx, "server").Result()
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
				if pid, err = strconv.Atoi(v); err != nil {
					return nil, fmt.Errorf("redis INFO process_id %q: %v", v, err)
				}
				return []int{pid}, nil
			}
		}
		return nil, errors.New("redis INFO server has no process_id")
	}
}

// pgBackendSource is the Postgres backends whose connections carry
// application_name app: webhookd's own, when its DSN sets it. Postgres
// must run on this machine, in this pid namespace.
func pgBackendSource(dsn, app string) cpuSource {
	return func(ctx context.Context) ([]int, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int])
	}
}
