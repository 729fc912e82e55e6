package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/midtrans"
)

// End-to-end tests of the notifications confirmed with the gateway's status
// API before they are forwarded (Midtrans's and Duitku's, whose signatures
// cover neither the status nor all of the amount), on the harness of
// receiver_test.go, against a stand-in of each API.

// duitkuStatus is an answer of Duitku's transaction status API for the
// failed card callback of fixtures/duitku/credit_card_failed.json.
func duitkuStatus(reference, code string) string {
	return fmt.Sprintf(`{"merchantOrderId":"INV-2024-000732","reference":%q,"amount":"275000","fee":"0.00","statusCode":%q,"statusMessage":"x"}`, reference, code)
}

// TestDuitkuVerifyStatus is the reviewer's attack end to end: a genuine
// failed callback re-sent with resultCode=00 and reference=ATTACK keeps a
// valid signature (Duitku signs neither field), so only the status check
// refuses it.
func TestDuitkuVerifyStatus(t *testing.T) {
	api := newStatusStub(t)
	dk, err := duitku.New(duitkuMerchant, []string{duitkuKey}, duitku.WithStatusCheck(api.URL), duitku.WithStatusTimeout(2*time.Second))
	require.NoError(t, err)
	h := newHarness(t, withProviders(dk))
	signed, err := dk.Sign(fixture(t, "duitku", "credit_card_failed.json"))
	failed, header := signed.Body, signed.Header
	require.NoError(t, err)
	forged := strings.Replace(string(failed), "resultCode=01", "resultCode=00", 1)
	forged = strings.Replace(forged, "reference=DS1578224L3RB7YD2C6XGF", "reference=ATTACK", 1)
	require.NoError(t, newDuitku(t, duitkuKey).Verify(context.Background(), providers.Delivery{Body: []byte(forged)}), "the forgery verifies")

	t.Run("the forged success is 401, not forwarded, key released", func(t *testing.T) {
		api.set(http.StatusOK, duitkuStatus("DS1578224L3RB7YD2C6XGF", "02"))
		r := h.sendAs(duitku.Name, []byte(forged), header)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Zero(t, h.down.calls.Load())
		require.Empty(t, h.records(), "the key is released")
	})

	t.Run("API down is 503 with Retry-After, key released, the retry is forwarded", func(t *testing.T) {
		api.set(http.StatusInternalServerError, ``)
		r := h.sendAs(duitku.Name, failed, header)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.NotEmpty(t, r.header.Get("Retry-After"))
		require.Zero(t, h.down.calls.Load())
		require.Empty(t, h.records())

		api.set(http.StatusOK, duitkuStatus("DS1578224L3RB7YD2C6XGF", "02"))
		r = h.sendAs(duitku.Name, failed, header)
		require.Equal(t, http.StatusCreated, r.status)
		require.EqualValues(t, 1, h.down.calls.Load())
		require.Equal(t, dedupe.Completed, h.state("duitku:INV-2024-000732:DS1578224L3RB7YD2C6XGF:01"))
	})

	t.Run("API unreachable is 503", func(t *testing.T) {
		api.Close()
		r := h.sendAs(duitku.Name, []byte(forged), header)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.NotContains(t, r.body, api.URL)
		require.EqualValues(t, 1, h.down.calls.Load())
	})
}

// duitkuOrders is a stand-in for Duitku's status API that knows some
// orders: it answers each request for the merchantOrderId it names, 400
// for an unknown one (as Duitku does), and counts its calls.
type duitkuOrders struct {
	*httptest.Server
	calls atomic.Int64
}

func newDuitkuOrders(t *testing.T, orders map[string]string) *duitkuOrders {
	d := &duitkuOrders{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.calls.Add(1)
		var req struct{ MerchantOrderID string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		answer, ok := orders[req.MerchantOrderID]
		if !ok {
			http.Error(w, `{"Message":"Transaction not found"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(d.Close)
	return d
}

// duitkuCallback is a callback form for order of amount, signed under key.
func duitkuCallback(order, amount, reference, code, key string) []byte {
	sig := duitku.Signature(duitkuMerchant, amount, order, key)
	return []byte("merchantCode=" + duitkuMerchant + "&amount=" + amount + "&merchantOrderId=" + order +
		"&reference=" + reference + "&resultCode=" + code + "&signature=" + sig)
}

// TestDuitkuShiftedDigits is the second reviewer's attack end to end: the
// signature joins amount and merchantOrderId without a separator, so a
// genuine success for order 12345 of 10000 also verifies as order 2345 of
// 100001 and as order 012345 of 1000. With the status check (on by
// default) each shifted reading is refused, because Duitku's API reports
// another amount for the order it names, or no such order; the genuine
// callback is forwarded once, and its retries make no call.
func TestDuitkuShiftedDigits(t *testing.T) {
	api := newDuitkuOrders(t, map[string]string{
		"12345": `{"merchantOrderId":"12345","reference":"DS15782REF1","amount":"10000","statusCode":"00","statusMessage":"SUCCESS"}`,
		"2345":  `{"merchantOrderId":"2345","reference":"DS15782REF2","amount":"5000","statusCode":"01","statusMessage":"PENDING"}`,
	})
	dk, err := duitku.New(duitkuMerchant, []string{duitkuKey}, duitku.WithStatusCheck(api.URL), duitku.WithStatusTimeout(2*time.Second))
	require.NoError(t, err)
	h := newHarness(t, withProviders(dk))
	header := http.Header{"Content-Type": {duitku.ContentType}}

	genuine := duitkuCallback("12345", "10000", "DS15782REF1", "00", duitkuKey)
	shifted := [][]byte{
		duitkuCallback("2345", "100001", "DS15782REF2", "00", duitkuKey),
		duitkuCallback("012345", "1000", "DS15782REF1", "00", duitkuKey),
	}
	for _, s := range shifted {
		require.Equal(t, string(genuine[bytes.Index(genuine, []byte("&signature=")):]), string(s[bytes.Index(s, []byte("&signature=")):]),
			"each shifted reading carries the genuine signature")
		require.NoError(t, dk.Verify(context.Background(), providers.Delivery{Header: header, Body: s}), "and verifies")
	}

	t.Run("opted out, each reading is a new event", func(t *testing.T) {
		h := newHarness(t, withProviders(newDuitku(t, duitkuKey)))
		for _, b := range append([][]byte{genuine}, shifted...) {
			require.Equal(t, http.StatusCreated, h.sendAs(duitku.Name, b, header).status)
		}
		require.EqualValues(t, 3, h.down.calls.Load())
	})

	r := h.sendAs(duitku.Name, genuine, header)
	require.Equal(t, http.StatusCreated, r.status)
	require.EqualValues(t, 1, h.down.calls.Load())
	require.EqualValues(t, 1, api.calls.Load())

	for _, s := range shifted {
		r := h.sendAs(duitku.Name, s, header)
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusServiceUnavailable}, r.status, "%s", s)
		require.EqualValues(t, 1, h.down.calls.Load(), "%s is not forwarded", s)
	}
	require.Len(t, h.records(), 1, "only the genuine event is recorded")

	// Duitku's retries of the genuine callback are replays: no status call.
	calls := api.calls.Load()
	for range 3 {
		r := h.sendAs(duitku.Name, genuine, header)
		require.Equal(t, http.StatusCreated, r.status)
	}
	require.EqualValues(t, 1, h.down.calls.Load())
	require.Equal(t, calls, api.calls.Load(), "a replayed duplicate makes no status call")
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
