package receiver_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
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

// TestStalledUploadsGet503: connections that send all but the last byte of
// a body and stall hold MaxPendingBodyBytes between them; a delivery that
// comes then is answered 503 with Retry-After, and is forwarded once the
// stalled connections are gone.
func TestStalledUploadsGet503(t *testing.T) {
	const limit = 4096
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) {
			c.MaxBodyBytes, c.MaxPendingBodyBytes, c.BodyWait = limit, 2*limit, -1
		}
	})
	addr := h.srv.Listener.Addr().String()
	var stalled []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = fmt.Fprintf(c, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			limit, strings.Repeat("x", limit-1))
		require.NoError(t, err)
		stalled = append(stalled, c)
	}

	body := event("evt_stalled", 1)
	var busy reply
	// The stalled bytes reach the handlers in their own time; a delivery
	// read before they did is forwarded, its resends replayed.
	require.Eventually(t, func() bool {
		busy = h.deliver(body)
		return busy.status == http.StatusServiceUnavailable
	}, 30*time.Second, 5*time.Millisecond)
	require.NotEmpty(t, busy.header.Get("Retry-After"))
	require.Contains(t, busy.body, receiver.ErrBusy.Error())

	for _, c := range stalled {
		require.NoError(t, c.Close())
	}
	require.Eventually(t, func() bool {
		r := h.deliver(event("evt_after_stall", 1))
		return r.status == http.StatusCreated
	}, 30*time.Second, 5*time.Millisecond)
}

// TestLargestBodyLimit: WEBHOOKD_MAX_BODY_BYTES's largest value,
// 9223372036854775807, is a limit like any other: limit+1 must not
// overflow into a panic (500).
func TestLargestBodyLimit(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) { c.MaxBodyBytes = math.MaxInt64 }
	})
	r := h.deliver(event("evt_largest_limit", 1))
	require.Equal(t, http.StatusCreated, r.status, r.body)
	again := h.deliver(event("evt_largest_limit", 1))
	require.Equal(t, http.StatusCreated, again.status, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
}

// TestReadTimeoutGivesTheShareBack: an upload that stalls holds its share
// of MaxPendingBodyBytes only until the server's ReadTimeout cuts it
// (cmd/webhookd sets 30 s): it is answered 400, and the next delivery is
// read again.
func TestReadTimeoutGivesTheShareBack(t *testing.T) {
	const limit = 4096
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(ad))
	h, err := receiver.New(receiver.Config{Providers: &reg, Store: newMemStore(), Forwarder: instantForwarder{},
		MaxBodyBytes: limit, MaxPendingBodyBytes: limit, BodyWait: -1})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 3 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)

	stalled, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { stalled.Close() })
	_, err = fmt.Fprintf(stalled, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		limit, strings.Repeat("x", limit-1))
	require.NoError(t, err)

	post := func(id string) int {
		body := event(id, 1)
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/stripe", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", sign(t, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The stalled bytes reach the handler in their own time.
	require.Eventually(t, func() bool { return post("evt_during_stall") == http.StatusServiceUnavailable },
		2*time.Second, time.Millisecond, "the stalled upload holds the whole budget")

	// The read timeout ends the stalled request: it is answered, and its
	// share comes back.
	resp, err := http.ReadResponse(bufio.NewReader(stalled), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, http.StatusCreated, post("evt_after_stall"))
}
