package receiver_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

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
