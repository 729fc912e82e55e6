package receiver_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/spec"
)

// End-to-end tests of what a gateway's own deliveries exercise beyond
// cmd/webhookd's provider suite (a key or secret format, a signature
// carried in the body or as a token, a dashboard replay), on the harness of
// receiver_test.go with the providers registered next to Stripe's, and the
// helpers the receiver's end-to-end tests share.

const (
	midtransKey = "SB-Mid-server-test" // signs fixtures/midtrans
	xenditToken = "xnd_e2e_callback_token_5d9c1f0e7a3b"
)

func withProviders(extra ...providers.Provider) func(*harness) {
	return func(h *harness) { h.extra = extra }
}

func newMidtrans(t *testing.T, opts ...midtrans.Option) *midtrans.Adapter {
	a, err := midtrans.New(midtransKey, opts...)
	require.NoError(t, err)
	return a
}

// xenditHeader carries Xendit's callback token.
const xenditHeader = "X-Callback-Token"

func newXendit(t *testing.T) *spec.Provider {
	p, err := builtinSpec(t, "xendit").New([]string{xenditToken}, nil, nil)
	require.NoError(t, err)
	return p
}

func fixture(t *testing.T, provider, name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "fixtures", provider, name))
	require.NoError(t, err)
	return b
}

// send posts body to /webhooks/provider with header, as JSON.
func (h *harness) send(provider string, body []byte, header http.Header) reply {
	h.t.Helper()
	header = header.Clone()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", "application/json")
	return h.sendAs(provider, body, header)
}

// signed sends body the way the provider would: signed by the adapter.
func (h *harness) signed(p providers.Provider, body []byte) reply {
	h.t.Helper()
	signed, err := providers.Sign(p, body)
	out, header := signed.Body, signed.Header
	require.NoError(h.t, err)
	return h.send(p.Name(), out, header)
}

// forwarded returns the Idempotency-Key and Webhook-Event-Type of every
// request the downstream received, in order.
func (h *harness) forwarded() (keys, types []string) {
	h.down.mu.Lock()
	defer h.down.mu.Unlock()
	for _, r := range h.down.got {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		types = append(types, r.Header.Get("Webhook-Event-Type"))
	}
	return keys, types
}

func TestMidtransEndToEnd(t *testing.T) {
	const card = "0b9e4d2a-71c5-4f60-a8d3-5e2f1c9b7a04"
	mt := newMidtrans(t)
	h := newHarness(t, withProviders(mt))

	t.Run("forwarded once, retries replayed", func(t *testing.T) {
		body := fixture(t, "midtrans", "bank_transfer_settlement.json")
		for i := range 3 {
			r := h.signed(mt, body)
			require.Equal(t, http.StatusCreated, r.status)
			require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true", "attempt %d", i)
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0], "the raw body, byte for byte")
		require.Equal(t, "midtrans:6f1c2b7e-3a41-4d8e-9b1a-0c2d3e4f5a61:settlement:accept", got.Header.Get("Idempotency-Key"))
		require.Equal(t, "midtrans", got.Header.Get("Webhook-Provider"))
		require.Equal(t, "6f1c2b7e-3a41-4d8e-9b1a-0c2d3e4f5a61:settlement:accept", got.Header.Get("Webhook-Event-Id"))
		require.Equal(t, "settlement", got.Header.Get("Webhook-Event-Type"))
		require.Equal(t, dedupe.Completed, h.state("midtrans:6f1c2b7e-3a41-4d8e-9b1a-0c2d3e4f5a61:settlement:accept"))
	})

	t.Run("each status change of a transaction is forwarded", func(t *testing.T) {
		before := h.down.calls.Load()
		for _, name := range []string{
			"credit_card_capture_challenge.json", "credit_card_capture_accept.json", "credit_card_settlement.json",
			"gopay_partial_refund_1.json", "gopay_partial_refund_2.json",
		} {
			require.Equal(t, http.StatusCreated, h.signed(mt, fixture(t, "midtrans", name)).status, name)
		}
		// Retries of each are replayed.
		for _, name := range []string{"credit_card_capture_challenge.json", "credit_card_capture_accept.json", "gopay_partial_refund_1.json"} {
			r := h.signed(mt, fixture(t, "midtrans", name))
			require.Equal(t, "true", r.header.Get("Idempotent-Replayed"), name)
		}
		require.EqualValues(t, before+5, h.down.calls.Load())
		keys, types := h.forwarded()
		require.Equal(t, []string{
			"midtrans:" + card + ":capture:challenge",
			"midtrans:" + card + ":capture:accept",
			"midtrans:" + card + ":settlement:accept",
			"midtrans:9d3f6a21-8c4e-4a7b-b2d0-61e5f7a8c3d2:partial_refund:accept:WH-REFUND-2044-01",
			"midtrans:9d3f6a21-8c4e-4a7b-b2d0-61e5f7a8c3d2:partial_refund:accept:WH-REFUND-2044-02",
		}, keys[before:])
		require.Equal(t, []string{"capture", "capture", "settlement", "partial_refund", "partial_refund"}, types[before:])
	})

	t.Run("forged or unsigned notifications are 401, store untouched", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		body := fixture(t, "midtrans", "qris_expire.json")
		for name, forged := range map[string][]byte{
			"amount edited":      bytes.Replace(body, []byte(`"56000.00"`), []byte(`"5600.00"`), 1),
			"amount reformatted": bytes.Replace(body, []byte(`"56000.00"`), []byte(`"56000"`), 1),
			"order edited":       bytes.Replace(body, []byte(`WH-ORDER-2043`), []byte(`WH-ORDER-2044`), 1),
			"signature dropped":  bytes.Replace(body, []byte(`"signature_key"`), []byte(`"signature"`), 1),
			"not JSON":           []byte(`transaction_status=settlement`),
		} {
			require.NotEqual(t, body, forged, name)
			r := h.send("midtrans", forged, nil)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
			require.NotContains(t, r.body, midtransKey, name)
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
	})
}

func TestXenditEndToEnd(t *testing.T) {
	x := newXendit(t)
	h := newHarness(t, withProviders(x))

	t.Run("an invoice that expires and is then paid is two events", func(t *testing.T) {
		for _, name := range []string{"invoice_expired.json", "invoice_paid.json", "invoice_expired.json", "invoice_paid.json"} {
			r := h.signed(x, fixture(t, "xendit", name))
			require.Equal(t, http.StatusCreated, r.status, name)
		}
		require.EqualValues(t, 2, h.down.calls.Load(), "the second of each is replayed")
		keys, types := h.forwarded()
		require.Equal(t, []string{"xendit:65f2a1c4e7b3d90012ab34cd:EXPIRED", "xendit:65f2a1c4e7b3d90012ab34cd:PAID"}, keys)
		require.Equal(t, []string{"EXPIRED", "PAID"}, types)
		require.Equal(t, fixture(t, "xendit", "invoice_paid.json"), h.down.bodies[1])
		require.Equal(t, "xendit", h.down.got[1].Header.Get("Webhook-Provider"))
		require.Empty(t, h.down.got[1].Header.Get(xenditHeader), "the token is not forwarded")
	})

	t.Run("envelopes, virtual accounts and refunds", func(t *testing.T) {
		before := h.down.calls.Load()
		for _, name := range []string{"payment_succeeded.json", "payment_capture.json", "virtual_account_paid.json", "refund_succeeded.json"} {
			require.Equal(t, http.StatusCreated, h.signed(x, fixture(t, "xendit", name)).status, name)
			require.Equal(t, "true", h.signed(x, fixture(t, "xendit", name)).header.Get("Idempotent-Replayed"), name)
		}
		keys, types := h.forwarded()
		require.Equal(t, []string{
			"xendit:payment.succeeded:ewc_7a3d91f0-5c2e-4b8a-a1d6-0e9f3c7b2a58",
			"xendit:payment.capture:py-c81f2d4e-6a93-4b07-9e1c-3d5a7f0b2e64:cptr-5e0a9d3b-7f21-4c8e-a6b4-1d2c3e4f5a06",
			"xendit:7c1e9a4b3f2d8e06a5b4c3d2",
			"xendit:refund.succeeded:rfd-3a9c7e1b-4d2f-4a6e-8b0c-5f1d9e7a2c38",
		}, keys[before:])
		require.Equal(t, []string{"payment.succeeded", "payment.capture", "", "refund.succeeded"}, types[before:])
	})

	t.Run("wrong, missing or repeated token is 401, store untouched", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		body := fixture(t, "xendit", "refund_succeeded.json")
		for name, header := range map[string]http.Header{
			"missing":  nil,
			"empty":    {xenditHeader: {""}},
			"wrong":    {xenditHeader: {xenditToken + "x"}},
			"repeated": {xenditHeader: {xenditToken, xenditToken}},
		} {
			r := h.send("xendit", body, header)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
			require.NotContains(t, r.body, xenditToken, name)
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
	})

	t.Run("a valid token on an unusable body is 400, store untouched", func(t *testing.T) {
		recs := len(h.records())
		for _, body := range []string{`not json`, `{}`, `{"id":"a b","status":"PAID"}`, `{"id":"i","status":"A","status":"B"}`} {
			r := h.signed(x, []byte(body))
			require.Equal(t, http.StatusBadRequest, r.status, body)
		}
		require.Len(t, h.records(), recs)
	})
}

// TestSameIDAcrossProviders checks that the provider is part of the key: a
// Stripe event and a Xendit callback whose keys are the same string are two
// events, both forwarded, with different Idempotency-Keys.
func TestSameIDAcrossProviders(t *testing.T) {
	x := newXendit(t)
	h := newHarness(t, withProviders(x))
	const id = "evt_shared_0001"

	require.Equal(t, http.StatusCreated, h.deliver(event(id, 1)).status)
	require.Equal(t, http.StatusCreated, h.signed(x, []byte(`{"id":"`+id+`","amount":1}`)).status)
	require.EqualValues(t, 2, h.down.calls.Load())
	keys, _ := h.forwarded()
	require.Equal(t, []string{"stripe:" + id, "xendit:" + id}, keys)
	require.Equal(t, id, h.down.got[0].Header.Get("Webhook-Event-Id"))
	require.Equal(t, id, h.down.got[1].Header.Get("Webhook-Event-Id"))
	require.Equal(t, dedupe.Completed, h.state("stripe:"+id))
	require.Equal(t, dedupe.Completed, h.state("xendit:"+id))

	// And each is replayed on its own.
	require.Equal(t, "true", h.deliver(event(id, 1)).header.Get("Idempotent-Replayed"))
	require.Equal(t, "true", h.signed(x, []byte(`{"id":"`+id+`","amount":1}`)).header.Get("Idempotent-Replayed"))
	require.EqualValues(t, 2, h.down.calls.Load())
}

const (
	paddleSecret    = "pdl_ntfset_01jwe2e000000000000000000_e2eSecretNew"
	paddleSecretOld = "pdl_ntfset_01jwe2e000000000000000000_e2eSecretOld"
)

func newPaddle(t *testing.T, secrets ...string) *spec.Provider {
	a, err := spec.NewBuiltin("paddle", secrets, nil, nil)
	require.NoError(t, err)
	return a
}

func TestPaddleEndToEnd(t *testing.T) {
	// Rotation: the new secret first (replay signs with it), the old one
	// still accepted.
	p := newPaddle(t, paddleSecret, paddleSecretOld)
	h := newHarness(t, withProviders(p))
	body := fixture(t, "paddle", "transaction_completed.json")
	const key = "paddle:evt_01jwh3k8q4m7r2t9v5x0b6c1d8"

	t.Run("forwarded once with the contract's headers, resend and dashboard replay replayed", func(t *testing.T) {
		r := h.signed(p, body)
		require.Equal(t, http.StatusCreated, r.status)
		require.Empty(t, r.header.Get("Idempotent-Replayed"))
		// Paddle's retry: the same notification signed again later.
		retry := h.send("paddle", body, http.Header{"Paddle-Signature": {paddleSignature(t, paddleSecret, time.Now().Add(time.Minute), body)}})
		require.Equal(t, http.StatusCreated, retry.status)
		require.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
		// A replay from the dashboard: a new notification_id, same event.
		replayed := bytes.Replace(body, []byte("ntf_01jwh3k8t2n6p0s4w8y3a7e5f9"), []byte("ntf_01jwzzreplayed00000000000"), 1)
		require.NotEqual(t, body, replayed)
		require.Equal(t, "true", h.signed(p, replayed).header.Get("Idempotent-Replayed"))

		require.EqualValues(t, 1, h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0], "the raw body, byte for byte")
		require.Equal(t, key, got.Header.Get("Idempotency-Key"))
		require.Equal(t, "paddle", got.Header.Get("Webhook-Provider"))
		require.Equal(t, "evt_01jwh3k8q4m7r2t9v5x0b6c1d8", got.Header.Get("Webhook-Event-Id"))
		require.Equal(t, "transaction.completed", got.Header.Get("Webhook-Event-Type"))
		require.Equal(t, "application/json", got.Header.Get("Content-Type"))
		require.Empty(t, got.Header.Get("Paddle-Signature"), "the signature is not forwarded")
		require.Equal(t, dedupe.Completed, h.state(key))
	})

	t.Run("rotation: signed with the old secret, or with both", func(t *testing.T) {
		before := h.down.calls.Load()
		old := fixture(t, "paddle", "subscription_created.json")
		r := h.send("paddle", old, http.Header{"Paddle-Signature": {paddleSignature(t, paddleSecretOld, time.Now(), old)}})
		require.Equal(t, http.StatusCreated, r.status)
		both := fixture(t, "paddle", "adjustment_created.json")
		now := time.Now()
		newH := paddleSignature(t, paddleSecret, now, both)
		oldH := paddleSignature(t, paddleSecretOld, now, both)
		_, newH1, _ := strings.Cut(newH, ";")
		r = h.send("paddle", both, http.Header{"Paddle-Signature": {oldH + ";" + newH1}})
		require.Equal(t, http.StatusCreated, r.status)
		keys, types := h.forwarded()
		require.Equal(t, []string{"paddle:evt_01jwh3k9b7e3h9l5p1s7v3y9c5", "paddle:evt_01jwm2a6f1j7m3q9t5w1z7c3f9"}, keys[before:])
		require.Equal(t, []string{"subscription.created", "adjustment.created"}, types[before:])
	})

	t.Run("forged, stale or future-dated notifications are 401, store untouched", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		fresh := fixture(t, "paddle", "transaction_payment_failed.json")
		now := time.Now()
		for name, tc := range map[string]struct {
			body   []byte
			header string
		}{
			"unsigned":           {fresh, ""},
			"amount edited":      {bytes.Replace(fresh, []byte(`"6532"`), []byte(`"6533"`), 1), paddleSignature(t, paddleSecret, now, fresh)},
			"unknown secret":     {fresh, paddleSignature(t, "pdl_ntfset_someone_else", now, fresh)},
			"older than 5m":      {fresh, paddleSignature(t, paddleSecret, now.Add(-6*time.Minute), fresh)},
			"more than 5m ahead": {fresh, paddleSignature(t, paddleSecret, now.Add(6*time.Minute), fresh)},
			"a year ahead":       {fresh, paddleSignature(t, paddleSecret, now.AddDate(1, 0, 0), fresh)},
			"timestamp replaced": {fresh, strings.Replace(paddleSignature(t, paddleSecret, now, fresh), "ts=", "ts=1", 1)},
		} {
			var header http.Header
			if tc.header != "" {
				header = http.Header{"Paddle-Signature": {tc.header}}
			}
			r := h.send("paddle", tc.body, header)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
			require.NotContains(t, r.body, paddleSecret, name)
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
	})

	t.Run("a changed payload under the same event_id is 422", func(t *testing.T) {
		changed := bytes.Replace(body, []byte(`"grand_total": "16331"`), []byte(`"grand_total": "16332"`), 1)
		require.NotEqual(t, body, changed)
		require.Equal(t, http.StatusUnprocessableEntity, h.signed(p, changed).status)
	})
}

// paddleSignature is the Paddle-Signature header of body signed with
// secret at time at, as the built-in paddle spec signs it.
func paddleSignature(t testing.TB, secret string, at time.Time, body []byte) string {
	t.Helper()
	h, err := spec.SignBuiltin("paddle", secret, at, body)
	require.NoError(t, err)
	return h.Get("Paddle-Signature")
}
