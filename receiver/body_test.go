package receiver_test

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/receiver"
)

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestAnnouncedLengthHoldsNoMemory opens 200 connections that each announce
// a 1 MiB body and send none of it, as an unauthenticated client can: the
// receiver's memory must follow the bytes that arrive, not the
// Content-Length, so the heap stays within a few MiB of idle while they wait.
func TestAnnouncedLengthHoldsNoMemory(t *testing.T) {
	const (
		conns    = 200
		announce = 1 << 20
	)
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) { c.MaxBodyBytes = announce }
	})
	addr := h.srv.Listener.Addr().String()
	idle := heapInUse()
	goroutines := runtime.NumGoroutine()

	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = fmt.Fprintf(c, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", announce)
		require.NoError(t, err)
	}
	// Every connection's handler is waiting for its body once the server
	// runs a goroutine per connection; give them a moment more to allocate.
	require.Eventually(t, func() bool { return runtime.NumGoroutine() >= goroutines+conns },
		5*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	waiting := heapInUse()

	const mib = 1 << 20
	t.Logf("heap in use: idle %.1f MiB, %d connections announcing %d bytes and sending none %.1f MiB",
		float64(idle)/mib, conns, announce, float64(waiting)/mib)
	require.Less(t, int64(waiting)-int64(idle), int64(8*mib),
		"heap grew by %.1f MiB for bytes that never arrived", (float64(waiting)-float64(idle))/mib)
}
