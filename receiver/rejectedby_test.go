package receiver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/receiver"
)

// TestRejectedByTellsCoreFromWebhookd: the core service's own 422 is passed
// through unchanged, so without a mark it looks exactly like webhookd's 422
// for a fingerprint mismatch (under policy retry, every time). The answer's
// Webhook-Rejected-By header and the delivery log line's rejected_by field
// say which one it was.
func TestRejectedByTellsCoreFromWebhookd(t *testing.T) {
	tests := []struct {
		name        string
		policy      receiver.FailedPolicy
		coreRejects bool
		want        string
		wantOutcome string
		wantBody    string
	}{
		{"core's 422, policy replay", receiver.PolicyReplay, true, "core", "core_rejected", "unknown order"},
		{"core's 422, policy retry", receiver.PolicyRetry, true, "core", "core_rejected", "unknown order"},
		// webhookd's own answer is its JSON error (its text is not pinned
		// here).
		{"webhookd's mismatch 422, policy replay", receiver.PolicyReplay, false, "webhookd", "mismatch", ""},
		{"webhookd's mismatch 422, policy retry", receiver.PolicyRetry, false, "webhookd", "mismatch", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncBuffer
			h := newHarness(t, func(h *harness) {
				h.policy = tt.policy
				h.config = func(c *receiver.Config) { c.Logger = jsonLogger(&buf) }
			})
			if tt.coreRejects {
				h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/plain")
					w.WriteHeader(http.StatusUnprocessableEntity)
					_, _ = w.Write([]byte("unknown order"))
				})
			} else {
				first := h.deliver(event("evt_which", 1))
				require.Equal(t, http.StatusCreated, first.status)
				require.Empty(t, first.header.Get(receiver.RejectedByHeader), "a 2xx is no rejection")
			}

			// The second delivery of the core's case is a replay under
			// policy replay and a fresh forward under policy retry; the
			// mark is the same.
			for i := 0; i < 2; i++ {
				r := h.deliver(event("evt_which", 2))
				require.Equal(t, http.StatusUnprocessableEntity, r.status)
				require.Equal(t, tt.want, r.header.Get(receiver.RejectedByHeader), "delivery %d", i)
				if tt.coreRejects {
					require.Equal(t, tt.wantBody, r.body, "the core's body is passed through unchanged")
				} else {
					require.True(t, strings.HasPrefix(r.body, `{"error":`), r.body)
				}
			}

			lines := withMessage(logLines(t, buf.String()), "delivery")
			var rejections []map[string]any
			for _, l := range lines {
				if l["status"] == float64(http.StatusUnprocessableEntity) {
					rejections = append(rejections, l)
				}
			}
			require.Len(t, rejections, 2, buf.String())
			require.Equal(t, tt.want, rejections[0]["rejected_by"])
			require.Equal(t, tt.wantOutcome, rejections[0]["outcome"])
			require.Equal(t, tt.want, rejections[1]["rejected_by"])
			for _, l := range lines {
				if l["status"] != float64(http.StatusUnprocessableEntity) {
					require.NotContains(t, l, "rejected_by", "only a 4xx names a rejecter")
				}
			}
		})
	}
}
