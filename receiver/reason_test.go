package receiver_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/doku"
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
		{"no signature", "stripe", event("evt_a", 1), "", 401, "signature_missing", "no signature header"},
		{"wrong secret", "stripe", event("evt_a", 1), stripeSignature(t, "whsec_other", time.Now(), event("evt_a", 1)), 401, "signature_invalid", "no valid signature"},
		{"stale timestamp", "stripe", event("evt_a", 1), stripeSignature(t, secret, time.Now().Add(-time.Hour), event("evt_a", 1)), 401, "timestamp_outside_tolerance", "timestamp older than the tolerance"},
		{"not json", "stripe", []byte(`[1]`), sign(t, []byte(`[1]`)), 400, "malformed", "not a JSON object"},
		{"no event id", "stripe", []byte(`{"type":"x"}`), sign(t, []byte(`{"type":"x"}`)), 400, "no_event_key", "no usable event key"},
		{"unknown route", "nosuch", ok, sign(t, ok), 404, "unknown_source", "unknown or unconfigured provider"},
		{"too large", "stripe", []byte(strings.Repeat("x", 5000)), "", 413, "too_large", "too large"},
		{"changed payload", "stripe", event("evt_ok", 2), sign(t, event("evt_ok", 2)), 422, "payload_mismatch", "payload differs"},
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

// TestAccountRefusalNamesTheEvent: a delivery refused for its account
// (here DOKU's Client-Id) is genuine, since the account is checked once the
// signature holds: its event key reaches the delivery line and
// Delivery.Key; a forged one's never does.
func TestAccountRefusalNamesTheEvent(t *testing.T) {
	const ours, theirs, secretKey = "MCH-0001-OURS", "MCH-0001-THEIRS", "SK-reason-test"
	ad, err := doku.New(ours, []string{secretKey})
	require.NoError(t, err)
	var mu sync.Mutex
	var got []receiver.Delivery
	h := newHarness(t, func(h *harness) {
		h.extra = []providers.Provider{ad}
		h.config = func(c *receiver.Config) {
			c.OnDelivery = func(d receiver.Delivery) { mu.Lock(); got = append(got, d); mu.Unlock() }
		}
	})
	body, err := os.ReadFile("../fixtures/doku/credit_card_success.json")
	require.NoError(t, err)
	send := func(clientID, key string) reply {
		ts := time.Now().UTC().Format(time.RFC3339)
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/doku", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Client-Id", clientID)
		req.Header.Set("Request-Id", "req-1")
		req.Header.Set("Request-Timestamp", ts)
		req.Header.Set("Signature", doku.SignatureHeader(key, clientID, "req-1", ts, doku.DefaultNotificationPath, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return reply{status: resp.StatusCode}
	}
	require.Equal(t, http.StatusUnauthorized, send(theirs, secretKey).status)
	require.Equal(t, http.StatusUnauthorized, send(theirs, "SK-forged").status)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	require.Equal(t, "account_not_allowed", got[0].Reason)
	require.True(t, strings.HasPrefix(got[0].Key, "doku:"), "the genuine event is named: %q", got[0].Key)
	require.Equal(t, "signature_invalid", got[1].Reason)
	require.Empty(t, got[1].Key, "a forged request names no event")
	require.Empty(t, h.records(), "nothing is stored either way")
}
