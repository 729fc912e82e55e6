package lmdb

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
)

// procStatus reads a field of /proc/self/status in KiB (0 where there is
// none).
func procStatus(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return n
		}
	}
	return 0
}

// BenchmarkQueueMillion queues a million events for one destination (the
// issue's target: disk, not heap) and reports the process's anonymous
// memory (RssAnon: the heap and stacks) and file-backed memory (RssFile:
// LMDB's map, which the kernel may drop at will) against an empty store,
// the Go heap in use, then the cost of a delivery pass that takes the 100
// events due out of the million:
//
//	go test ./dedupe/lmdb -run '^$' -bench QueueMillion -benchtime 1x
func BenchmarkQueueMillion(b *testing.B) {
	const events, due = 1_000_000, 100
	clock := dedupetest.NewClock()
	s, err := Open(b.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1, Now: clock.Now}, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	heap := func() float64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapInuse) / (1 << 20)
	}
	anon0, file0, heap0 := procStatus("RssAnon"), procStatus("RssFile"), heap()
	body := []byte(`{"id":"evt","object":"event","type":"invoice.paid","data":{"object":{"amount":1200,"currency":"eur"}}}`)
	enqueue := func(i int) error {
		_, err := s.Enqueue(ctx, dedupe.Enqueue{Key: fmt.Sprintf("stripe:evt_%09d\x1fledger", i), Fingerprint: "fp",
			MaxAge: 72 * time.Hour, Request: dedupe.NewRequest("application/json", "invoice.paid", body, true)})
		return err
	}
	for i := range due {
		if err := enqueue(i); err != nil {
			b.Fatal(err)
		}
	}
	clock.Advance(time.Hour) // the rest is due an hour later
	start := time.Now()
	var wg sync.WaitGroup
	const workers = 64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := due + w; i < events; i += workers {
				if err := enqueue(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	clock.Advance(-time.Hour)
	st, err := s.QueueStats(ctx, "ledger")
	if err != nil || st.Depth != events {
		b.Fatal(st, err)
	}
	anon1, file1, heap1 := procStatus("RssAnon"), procStatus("RssFile"), heap()
	b.ReportMetric(float64(events)/took.Seconds(), "enqueues/s")
	b.ReportMetric((anon1-anon0)/1024, "RssAnon-MiB-over-empty")
	b.ReportMetric((file1-file0)/1024, "RssFile-MiB-over-empty")
	b.ReportMetric(heap1-heap0, "heap-MiB-over-empty")

	// A pass over the million takes the hundred due, reading what it
	// takes (TestTakeCostsTheDueEvents holds the count).
	before := s.dueRead.Load()
	passStart := time.Now()
	got, err := s.Take(ctx, "ledger", 1000)
	if err != nil || len(got) != due {
		b.Fatal(len(got), err)
	}
	b.ReportMetric(float64(time.Since(passStart).Microseconds()), "pass-µs")
	b.ReportMetric(float64(s.dueRead.Load()-before), "index-entries-read")
}
