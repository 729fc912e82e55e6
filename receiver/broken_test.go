package receiver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// TestBrokenDownstreamBodyIsForwardedOnce: the core service answers 200 and
// then breaks the body (a connection closed short of its Content-Length, or a
// body that stalls past the dispatch timeout). The status line says the core
// acted, so the event is COMPLETED, and the provider's retry gets the stored
// 2xx replayed instead of forwarding the event a second time.
func TestBrokenDownstreamBodyIsForwardedOnce(t *testing.T) {
	for _, stall := range []bool{false, true} {
		name := map[bool]string{false: "Content-Length never filled", true: "body stalls past the timeout"}[stall]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(h *harness) { h.fwdTO = 300 * time.Millisecond })
			done := make(chan struct{})
			t.Cleanup(func() { close(done) })
			h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				defer conn.Close()
				_, _ = fmt.Fprint(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"received\"")
				_ = buf.Flush()
				if stall {
					<-done
				}
			})

			first := h.deliver(event("evt_broken", 1))
			require.Equal(t, http.StatusOK, first.status)
			require.Equal(t, `{"received"`, first.body, "what arrived of the body is passed on")
			require.Empty(t, first.header.Get("Idempotent-Replayed"))
			rec, err := h.store.Get(context.Background(), "stripe:evt_broken")
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)

			retry := h.deliver(event("evt_broken", 1))
			require.Equal(t, http.StatusOK, retry.status)
			require.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
			require.Equal(t, first.body, retry.body)
			require.Equal(t, "application/json", retry.header.Get("Content-Type"))
			require.EqualValues(t, 1, h.down.calls.Load(), "one forward across the provider's retry")
		})
	}
}
