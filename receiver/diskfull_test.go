package receiver_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/internal/smalldisk"
)

// TestFullDiskAnswers503AndRecovers fills the disk under a running receiver:
// a delivery whose claim cannot be written gets 503 with Retry-After (the
// provider retries), reaches nobody and leaves no claim behind; /readyz says
// the store cannot write; the provider is told no more than "store
// unavailable"; once space returns, the provider's retry of that
// same event is forwarded.
func TestFullDiskAnswers503AndRecovers(t *testing.T) {
	var dir string
	h := newHarness(t, func(h *harness) {
		dir = smalldisk.Mount(t, 2<<20)
		h.dir = dir
	})
	require.Equal(t, http.StatusCreated, h.deliver(event("evt_before", 1)).status)
	ballast := smalldisk.Fill(t, dir)

	// LMDB may still find a few free pages inside its file; the disk
	// refuses the first write that needs more.
	var refused string
	forwarded := h.down.calls.Load()
	for i := 0; i < 100 && refused == ""; i++ {
		id := fmt.Sprintf("evt_full_%03d", i)
		r := h.deliver(event(id, 1))
		switch r.status {
		case http.StatusCreated:
			forwarded++
		case http.StatusServiceUnavailable:
			refused = id
			require.NotEmpty(t, r.header.Get("Retry-After"))
			// The storage detail is for the log, never for the provider.
			require.JSONEq(t, `{"error":"store unavailable"}`, r.body)
		default:
			t.Fatalf("%s: unexpected %d %s", id, r.status, r.body)
		}
	}
	require.NotEmpty(t, refused, "a full disk must refuse a claim")
	require.Equal(t, forwarded, h.down.calls.Load(), "the refused delivery reached nobody")
	require.Zero(t, h.state("stripe:"+refused), "and left no claim")
	resp, err := http.Get(h.srv.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)

	// What was recorded before stays intact and is replayed.
	r := h.deliver(event("evt_before", 1))
	require.Equal(t, http.StatusCreated, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))

	require.NoError(t, os.Remove(ballast))
	r = h.deliver(event(refused, 1))
	require.Equal(t, http.StatusCreated, r.status, r.body)
	require.Equal(t, forwarded+1, h.down.calls.Load())
	require.Equal(t, dedupe.Completed, h.state("stripe:"+refused))
	resp, err = http.Get(h.srv.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestFullDiskAfterTheForwardReplaysTheRetry: the disk fills while the
// core service handles a forward, so the answer's write fails after the
// core has acted. The gateway hears the core's answer; the write is
// retried until space returns, and the gateway's retry once the lease has
// passed is replayed, not forwarded again (docs/store.md, "The store under
// faults").
func TestFullDiskAfterTheForwardReplaysTheRetry(t *testing.T) {
	var dir string
	h := newHarness(t, func(h *harness) {
		dir = smalldisk.Mount(t, 2<<20)
		h.dir = dir
	})
	answer := bytes.Repeat([]byte("a"), dedupe.MaxStoredBody)
	var ballast string
	h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		ballast = smalldisk.Fill(t, dir)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(answer)
	})
	body := event("evt_full_after_forward", 1)
	r := h.deliver(body)
	require.Equal(t, http.StatusCreated, r.status, "the gateway hears the core's answer")
	require.Equal(t, dedupe.InFlight, h.state("stripe:evt_full_after_forward"), "the answer could not be written")
	r = h.deliver(body)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "no claim while the answer is pending: %s", r.body)
	require.NotEmpty(t, r.header.Get("Retry-After"))

	require.NoError(t, os.Remove(ballast))
	require.Eventually(t, func() bool { return h.state("stripe:evt_full_after_forward") == dedupe.Completed },
		5*time.Second, 10*time.Millisecond, "the answer's write is retried once space returns")
	h.clock.Advance(2 * time.Minute) // past the lease
	r = h.deliver(body)
	require.Equal(t, http.StatusCreated, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Equal(t, answer, []byte(r.body))
	require.EqualValues(t, 1, h.down.calls.Load(), "forwarded once")
}
