package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/spec"
)

// End-to-end tests for Midtrans and Xendit, on the harness of
// receiver_test.go with the adapters registered next to Stripe's.

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

// send posts body to /webhooks/provider with header.
func (h *harness) send(provider string, body []byte, header http.Header) reply {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+provider, bytes.NewReader(body))
	require.NoError(h.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// signed sends body the way the provider would: signed by the adapter.
func (h *harness) signed(p providers.Provider, body []byte) reply {
	h.t.Helper()
	signed, err := p.Sign(body)
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

// statusStub is a local stand-in for Midtrans's GET status API whose answer
// a test changes as it goes.
type statusStub struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	answer string
	calls  int
}

func newStatusStub(t *testing.T) *statusStub {
	s := &statusStub{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls++
		status, answer := s.status, s.answer
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *statusStub) set(status int, answer string) {
	s.mu.Lock()
	s.status, s.answer = status, answer
	s.mu.Unlock()
}

func cardStatus(status, fraud string) string {
	return fmt.Sprintf(`{"status_code":"200","transaction_id":"0b9e4d2a-71c5-4f60-a8d3-5e2f1c9b7a04",`+
		`"order_id":"WH-ORDER-2042","gross_amount":"1250000.00","transaction_status":%q,"fraud_status":%q}`, status, fraud)
}

func TestMidtransVerifyStatus(t *testing.T) {
	api := newStatusStub(t)
	mt := newMidtrans(t, midtrans.WithStatusCheck(api.URL), midtrans.WithStatusTimeout(2*time.Second))
	h := newHarness(t, withProviders(mt))
	accept := fixture(t, "midtrans", "credit_card_capture_accept.json")
	// A captured notification replayed with its status edited still carries
	// a valid signature: Midtrans does not sign the status.
	forged := bytes.Replace(accept, []byte(`"transaction_status": "capture"`), []byte(`"transaction_status": "settlement"`), 1)
	require.NoError(t, newMidtrans(t).Verify(context.Background(), providers.Delivery{Body: forged}))

	t.Run("mismatch is 401, not forwarded, key released", func(t *testing.T) {
		api.set(http.StatusOK, cardStatus("capture", "accept"))
		r := h.signed(mt, forged)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Zero(t, h.down.calls.Load())
		require.Empty(t, h.records(), "the key is released")
		// A notification whose challenge was already accepted is refused
		// the same way: the API reports only the current status.
		r = h.signed(mt, fixture(t, "midtrans", "credit_card_capture_challenge.json"))
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Zero(t, h.down.calls.Load())
		require.Empty(t, h.records())
	})

	t.Run("API down is 503 with Retry-After, key released, the retry is forwarded", func(t *testing.T) {
		api.set(http.StatusInternalServerError, `{"status_code":"500"}`)
		r := h.signed(mt, accept)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.NotEmpty(t, r.header.Get("Retry-After"))
		require.Zero(t, h.down.calls.Load())
		require.Empty(t, h.records(), "the key is released")

		// Midtrans retries once the API is back: forwarded once.
		api.set(http.StatusOK, cardStatus("capture", "accept"))
		r = h.signed(mt, accept)
		require.Equal(t, http.StatusCreated, r.status)
		require.EqualValues(t, 1, h.down.calls.Load())
		require.Equal(t, dedupe.Completed, h.state("midtrans:0b9e4d2a-71c5-4f60-a8d3-5e2f1c9b7a04:capture:accept"))
	})

	t.Run("a completed event is replayed without asking the API", func(t *testing.T) {
		api.set(http.StatusInternalServerError, ``)
		api.mu.Lock()
		calls := api.calls
		api.mu.Unlock()
		r := h.signed(mt, accept)
		require.Equal(t, http.StatusCreated, r.status)
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		api.mu.Lock()
		require.Equal(t, calls, api.calls)
		api.mu.Unlock()
	})

	t.Run("API unreachable is 503, key released", func(t *testing.T) {
		api.Close()
		r := h.signed(mt, fixture(t, "midtrans", "credit_card_settlement.json"))
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.EqualValues(t, 1, h.down.calls.Load())
		require.Zero(t, h.state("midtrans:0b9e4d2a-71c5-4f60-a8d3-5e2f1c9b7a04:settlement:accept"), "no record")
		require.NotContains(t, r.body, api.URL)
	})
}
