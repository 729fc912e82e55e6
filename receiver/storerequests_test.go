package receiver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/receiver"
)

// The claim keeps the verified request with the record: its body when
// StoreRequests is set (WEBHOOKD_STORE_REQUESTS), else its headers and size
// only; the event type either way.
func TestClaimKeepsTheRequest(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(map[bool]string{true: "stored", false: "headers only"}[keep], func(t *testing.T) {
			h := newHarness(t, func(h *harness) {
				h.config = func(c *receiver.Config) { c.StoreRequests = keep }
			})
			body := event("evt_kept", 100)
			require.Equal(t, http.StatusCreated, h.deliver(body).status)
			rec, err := h.store.Get(context.Background(), "stripe:evt_kept")
			require.NoError(t, err)
			require.NotNil(t, rec.Request)
			require.Equal(t, "application/json; charset=utf-8", rec.Request.ContentType)
			require.Equal(t, len(body), rec.Request.Size)
			require.NotEmpty(t, rec.Request.EventType)
			require.Equal(t, keep, rec.Request.Stored())
			if keep {
				require.Equal(t, body, rec.Request.Body)
			}
		})
	}
}
