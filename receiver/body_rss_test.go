package receiver_test

import (
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

// BenchmarkStalledUploadsRSS is issue 26's scenario: 250 connections (and
// 500) each announce a body at the limit (1 MiB), send all of it but its
// last byte, and stall, as anyone can without a secret. It reports how much
// the process's RSS and heap grew while they stall: the default
// MaxPendingBodyBytes (64 MiB) and what the connections cost themselves.
// Run it once:
//
//	go test -run '^$' -bench BenchmarkStalledUploadsRSS -benchtime 1x ./receiver/
func BenchmarkStalledUploadsRSS(b *testing.B) {
	const (
		limit = 1 << 20
		mib   = 1 << 20
	)
	// Twice the connections must not cost twice the memory.
	for _, conns := range []int{250, 500} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				rss, heap := stalledUploadsGrowth(b, conns, limit)
				b.ReportMetric(float64(rss)/mib, "MiB-RSS-growth")
				b.ReportMetric(float64(heap)/mib, "MiB-heap-growth")
				b.StartTimer()
			}
		})
	}
}

// stalledUploadsGrowth serves a receiver, opens conns stalled uploads of
// limit−1 bytes and returns how much RSS and the heap in use grew once the
// server has taken what it will of them.
func stalledUploadsGrowth(b *testing.B, conns int, limit int64) (rss, heap int64) {
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(b, err)
	var reg providers.Registry
	require.NoError(b, reg.Register(ad))
	h, err := receiver.New(receiver.Config{Providers: &reg, Store: newMemStore(), Forwarder: instantForwarder{}, MaxBodyBytes: limit})
	require.NoError(b, err)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	payload := []byte(strings.Repeat("x", int(limit-1)))
	head := fmt.Sprintf("POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", limit)

	// What earlier runs left is handed back, so that each run starts
	// from the same floor.
	debug.FreeOSMemory()
	rss0, heap0 := rssBytes(b), int64(heapInUse())
	var wg sync.WaitGroup
	for range conns {
		c, err := net.Dial("tcp", addr)
		require.NoError(b, err)
		b.Cleanup(func() { c.Close() })
		wg.Go(func() {
			// A write the server stops reading fails once it answers
			// and hangs up; either way the connection has sent what it
			// will.
			_, _ = c.Write([]byte(head))
			_, _ = c.Write(payload)
		})
	}
	wg.Wait()
	// The last bytes written may still be on their way into the server's
	// buffers: wait until the RSS holds still.
	last := rssBytes(b)
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		now := rssBytes(b)
		if now-last < 1<<20 && last-now < 1<<20 {
			break
		}
		last = now
	}
	return rssBytes(b) - rss0, int64(heapInUse()) - heap0
}

// rssBytes reads the process's resident set size (Linux).
func rssBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Skip("no VmRSS")
	return 0
}
