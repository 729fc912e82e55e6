package lmdb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// BenchmarkClaimComplete measures what one webhook costs the store: a
// durable Claim of a new key, then a durable Complete. Each sub-benchmark
// runs b.N webhooks spread over a number of concurrent callers, with group
// commit (mode=group), with group commit and every op in its own nested
// transaction (mode=nested, the redo path of writer.go taken for every
// batch) and with one transaction per write
// (mode=perop, MaxBatch 1), so all three figures come out of one run:
//
//	go test ./dedupe/lmdb -run '^$' -bench ClaimComplete -count 5
//
// writes/s counts durable writes (two per webhook); p50_us and p99_us are
// the latency of one write as its caller sees it; writes/commit is the
// average batch the writer committed; cpu_us/webhook is the process's
// user and system CPU time (getrusage) per webhook, the kernel's work
// for the syncs included. Commits are synced, on the
// disk under $TMPDIR: on tmpfs the figures mean nothing, and the benchmark
// says so.
func BenchmarkClaimComplete(b *testing.B) {
	modes := []struct {
		name   string
		batch  int
		nested bool
	}{{"group", DefaultMaxBatch, false}, {"nested", DefaultMaxBatch, true}, {"perop", 1, false}}
	// The modes run back to back at each concurrency, so that a noisy
	// neighbour on the machine hits the two figures alike.
	for _, callers := range []int{1, 16, 64, 256} {
		for _, m := range modes {
			b.Run(fmt.Sprintf("mode=%s/callers=%d", m.name, callers), func(b *testing.B) {
				benchClaimComplete(b, m.batch, m.nested, callers)
			})
		}
	}
}

func benchClaimComplete(b *testing.B, maxBatch int, nested bool, callers int) {
	b.ReportAllocs()
	dir := b.TempDir()
	warnIfTmpfs(b, dir)
	open := Open
	if nested {
		open = openNestEveryOp
	}
	s, err := open(dir, Options{Options: dedupe.Options{PruneInterval: -1}, MaxBatch: maxBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	const fingerprint = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	resp := dedupe.Response{Status: 201, ContentType: "application/json", Body: []byte(`{"received":true}`)}
	ctx := context.Background()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		lats []time.Duration
		fail atomic.Value
	)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 2*b.N/callers+2)
			key := make([]byte, 0, 32)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					break
				}
				key = strconv.AppendInt(append(key[:0], "stripe:evt_"...), i, 10)
				t0 := time.Now()
				l, rec, err := s.Claim(ctx, string(key), fingerprint, nil)
				t1 := time.Now()
				if err == nil && rec != nil {
					err = fmt.Errorf("new key %s found as %v", key, rec.State)
				}
				if err == nil {
					err = s.Complete(ctx, l, resp)
				}
				if err != nil {
					fail.Store(err)
					return
				}
				mine = append(mine, t1.Sub(t0), time.Since(t1))
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err, ok := fail.Load().(error); ok {
		b.Fatal(err)
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu_us/webhook")
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "writes/s")
	b.ReportMetric(float64(s.writes.Load())/float64(s.commits.Load()), "writes/commit")
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Microseconds()), "p50_us")
	b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99_us")
}

// cpuTime is the user plus system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// warnIfTmpfs flags a run whose "durable" commits land in memory.
func warnIfTmpfs(b *testing.B, dir string) {
	const tmpfsMagic = 0x01021994
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil && st.Type == tmpfsMagic {
		b.Logf("WARNING: %s is on tmpfs: syncs are free and these figures do not measure durable writes; set TMPDIR to a real disk", dir)
	}
}
