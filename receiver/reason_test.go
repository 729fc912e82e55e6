package receiver_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/stripe"
	"github.com/webhookd/webhookd/receiver"
)

// TestRefusalsSayWhy: each refusal of docs/contract.md ("Refusals and the
// request log") reaches the delivery line's reason field and
// Delivery.Reason, while the answer's body stays what it was; an accepted
// delivery and the core's own rejection carry no reason.
func TestRefusalsSayWhy(t *testing.T) {
	var buf syncBuffer
	var mu sync.Mutex
	var got []receiver.Delivery
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) {
			c.Logger = jsonLogger(&buf)
			c.OnDelivery = func(d receiver.Delivery) { mu.Lock(); got = append(got, d); mu.Unlock() }
		}
	})
	ok := event("evt_ok", 1)
	require.Equal(t, http.StatusCreated, h.deliver(ok).status)
	tests := []struct {
		name     string
		provider string
		body     []byte
		sig      string
		status   int
		reason   string
		answer   string
	}{
		{"no signature", "stripe", event("evt_a", 1), "", 401, "signature_missing", "no Stripe-Signature header"},
		{"wrong secret", "stripe", event("evt_a", 1), stripe.SignatureHeader("whsec_other", time.Now(), event("evt_a", 1)), 401, "signature_invalid", "no valid v1 signature"},
		{"stale timestamp", "stripe", event("evt_a", 1), stripe.SignatureHeader(secret, time.Now().Add(-time.Hour), event("evt_a", 1)), 401, "timestamp_outside_tolerance", "timestamp outside tolerance"},
		{"not json", "stripe", []byte(`[1]`), sign([]byte(`[1]`)), 400, "malformed", "not a JSON object"},
		{"no event id", "stripe", []byte(`{"type":"x"}`), sign([]byte(`{"type":"x"}`)), 400, "no_event_key", "no usable id"},
		{"unknown route", "nosuch", ok, sign(ok), 404, "unknown_source", "unknown or unconfigured provider"},
		{"too large", "stripe", []byte(strings.Repeat("x", 5000)), "", 413, "too_large", "too large"},
		{"changed payload", "stripe", event("evt_ok", 2), sign(event("evt_ok", 2)), 422, "payload_mismatch", "payload differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(withMessage(logLines(t, buf.String()), "delivery"))
			r := h.post(tt.provider, tt.body, tt.sig)
			require.Equal(t, tt.status, r.status, r.body)
			require.Contains(t, r.body, tt.answer)
			require.NotContains(t, r.body, `"reason"`, "the answer carries no more than before")
			lines := withMessage(logLines(t, buf.String()), "delivery")[before:]
			require.Len(t, lines, 1)
			require.Equal(t, tt.reason, lines[0]["reason"])
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, tt.reason, got[len(got)-1].Reason)
		})
	}
	mu.Lock()
	require.Empty(t, got[0].Reason, "a forwarded delivery is no refusal")
	mu.Unlock()
}
