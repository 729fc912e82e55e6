package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
)

// End-to-end tests for Duitku (form bodies) and PayPal (verification that
// fetches a certificate), on the harness of receiver_test.go.

const (
	duitkuMerchant = "DS15782" // the merchantCode of fixtures/duitku
	duitkuKey      = "duitku_e2e_api_key_new"
	duitkuKeyOld   = "duitku_e2e_api_key_old"
	paypalWebhook  = "5GP028458E2496506"
)

func newDuitku(t *testing.T, keys ...string) *duitku.Adapter {
	a, err := duitku.New(duitkuMerchant, keys)
	require.NoError(t, err)
	return a
}

// sendAs posts body to /webhooks/provider with header, whose Content-Type
// stands (send sets JSON's).
func (h *harness) sendAs(provider string, body []byte, header http.Header) reply {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+provider, bytes.NewReader(body))
	require.NoError(h.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func TestDuitkuEndToEnd(t *testing.T) {
	receiving := newDuitku(t, duitkuKey, duitkuKeyOld)
	h := newHarness(t, withProviders(receiving))
	sender := newDuitku(t, duitkuKey)

	t.Run("form forwarded byte for byte with its Content-Type, retries replayed", func(t *testing.T) {
		signed, err := sender.Sign(fixture(t, "duitku", "ovo_success.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		for i := range 3 {
			r := h.sendAs(duitku.Name, body, header)
			require.Equal(t, http.StatusCreated, r.status, r.body)
			require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true", "attempt %d", i)
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0], "the raw form, byte for byte")
		require.Equal(t, "application/x-www-form-urlencoded", got.Header.Get("Content-Type"))
		require.Equal(t, "duitku:INV-2024-000733:DS1578224M9TC4NH8E1WJK:00", got.Header.Get("Idempotency-Key"))
		require.Equal(t, "00", got.Header.Get("Webhook-Event-Type"))
		require.Equal(t, dedupe.Completed, h.state("duitku:INV-2024-000733:DS1578224M9TC4NH8E1WJK:00"))
	})

	t.Run("the same callback with its fields in another order is a replay", func(t *testing.T) {
		signed, err := sender.Sign(fixture(t, "duitku", "ovo_success.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		pairs := strings.Split(string(body), "&")
		pairs[0], pairs[len(pairs)-1] = pairs[len(pairs)-1], pairs[0]
		r := h.sendAs(duitku.Name, []byte(strings.Join(pairs, "&")), header)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		require.EqualValues(t, 1, h.down.calls.Load())
	})

	t.Run("a field given twice is 400, nothing stored or forwarded", func(t *testing.T) {
		before := h.down.calls.Load()
		signed, err := sender.Sign(fixture(t, "duitku", "qris_success.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		for _, extra := range []string{"&amount=1", "&merchantOrderId=INV-2024-000999", "&resultCode=00"} {
			r := h.sendAs(duitku.Name, append(bytes.Clone(body), extra...), header)
			require.Equal(t, http.StatusBadRequest, r.status, extra)
			require.Contains(t, r.body, "given twice")
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Zero(t, h.state("duitku:INV-2024-000734:DS1578224N4VF6PK3A9ZQM:00"))
	})

	t.Run("forged, foreign or not a form is refused", func(t *testing.T) {
		before := h.down.calls.Load()
		body := fixture(t, "duitku", "va_bca_success.json")
		signed, err := newDuitku(t, "someone_elses_key").Sign(body)
		forged, header := signed.Body, signed.Header
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, h.sendAs(duitku.Name, forged, header).status)
		other, err := duitku.New("DS99999", []string{duitkuKey})
		require.NoError(t, err)
		signed, err = other.Sign([]byte(strings.Replace(string(body), "merchantCode=DS15782", "merchantCode=DS99999", 1)))
		foreign, header := signed.Body, signed.Header
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, h.sendAs(duitku.Name, foreign, header).status, "signed with our key for another merchant code")
		require.Equal(t, http.StatusBadRequest, h.sendAs(duitku.Name, []byte("%zz"), header).status)
		require.Equal(t, before, h.down.calls.Load())
	})

	t.Run("a callback signed with the old key is accepted", func(t *testing.T) {
		signed, err := newDuitku(t, duitkuKeyOld).Sign(fixture(t, "duitku", "credit_card_failed.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		r := h.sendAs(duitku.Name, body, header)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		require.Equal(t, "01", h.down.got[len(h.down.got)-1].Header.Get("Webhook-Event-Type"))
	})
}

func newPaypal(t *testing.T, srv *paypaltest.Server) *paypal.Adapter {
	a, err := paypal.New([]string{paypalWebhook}, srv.Options()...)
	require.NoError(t, err)
	return a
}

// paypalSend sends body as PayPal would, signed for the certificate cert,
// in a transmission of its own.
func (h *harness) paypalSend(srv *paypaltest.Server, cert, transmission string, body []byte) reply {
	h.t.Helper()
	header := srv.Sign(cert, paypalWebhook, transmission, time.Now(), body)
	header.Set("Content-Type", "application/json")
	return h.sendAs(paypal.Name, body, header)
}

func TestPaypalEndToEnd(t *testing.T) {
	srv := paypaltest.NewServer(t)
	h := newHarness(t, withProviders(newPaypal(t, srv)))
	names := []string{"payment_capture_completed.json", "payment_capture_refunded.json", "checkout_order_approved.json", "payment_capture_denied.json"}

	t.Run("certificate fetched once for many deliveries, each event forwarded once", func(t *testing.T) {
		for i := range 3 {
			for _, name := range names {
				r := h.paypalSend(srv, paypaltest.Good, name+"-attempt-"+string(rune('1'+i)), fixture(t, "paypal", name))
				require.Equal(t, http.StatusCreated, r.status, "%s attempt %d: %s", name, i, r.body)
				require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true")
			}
		}
		require.EqualValues(t, 1, srv.Fetches.Load(), "one certificate fetch for %d deliveries", 3*len(names))
		require.EqualValues(t, len(names), h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, fixture(t, "paypal", names[0]), h.down.bodies[0], "the raw body, byte for byte")
		require.Equal(t, "paypal:WH-7WD58212KL104362H-4RH63195UV8822031", got.Header.Get("Idempotency-Key"))
		require.Equal(t, "PAYMENT.CAPTURE.COMPLETED", got.Header.Get("Webhook-Event-Type"))
		require.Empty(t, got.Header.Get(paypal.HeaderTransmissionSig), "PayPal's headers are not forwarded")
	})

	t.Run("refused certificates are 401, nothing stored", func(t *testing.T) {
		body := []byte(strings.Replace(string(fixture(t, "paypal", names[0])), "WH-7WD58212KL104362H", "WH-0NEW0000000000000", 1))
		for _, cert := range []string{paypaltest.Expired, paypaltest.Foreign, paypaltest.Untrusted, paypaltest.Missing} {
			r := h.paypalSend(srv, cert, "tx-"+cert, body)
			require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", cert, r.body)
			require.Empty(t, r.header.Get("Retry-After"))
		}
		header := srv.Sign(paypaltest.Good, paypalWebhook, "tx-host", time.Now(), body)
		header.Set(paypal.HeaderCertURL, "https://certs.example.com/v1/notifications/certs/"+paypaltest.Good)
		before := srv.Fetches.Load()
		r := h.sendAs(paypal.Name, body, header)
		require.Equal(t, http.StatusUnauthorized, r.status, "cert host not allowed: %s", r.body)
		require.Contains(t, r.body, "not on an allowed host")
		require.Equal(t, before, srv.Fetches.Load(), "a host not allowed is never asked")
		require.Zero(t, h.state("paypal:WH-0NEW0000000000000-4RH63195UV8822031"))
	})

	t.Run("certificate server down is 503 with Retry-After, not fetched again for 30s, then the retry is forwarded", func(t *testing.T) {
		fresh := paypaltest.NewServer(t) // a new adapter and certificate URL: nothing cached
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		ad, err := paypal.New([]string{paypalWebhook}, append(fresh.Options(), paypal.WithClock(clock))...)
		require.NoError(t, err)
		h := newHarness(t, withProviders(ad))
		body := fixture(t, "paypal", names[1])
		fresh.Down.Store(true)
		r := h.paypalSend(fresh, paypaltest.Good, "tx-down", body)
		require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
		require.NotEmpty(t, r.header.Get("Retry-After"))
		require.Zero(t, h.down.calls.Load())
		require.Zero(t, h.state("paypal:WH-1AB29874QX5563120-8TT47721MN3390442"), "no key claimed")
		fresh.Down.Store(false)
		r = h.paypalSend(fresh, paypaltest.Good, "tx-retry", body)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "within 30s of the failure: %s", r.body)
		require.EqualValues(t, 1, fresh.Fetches.Load())
		mu.Lock()
		now = now.Add(paypal.FailedFetchPause)
		mu.Unlock()
		r = h.paypalSend(fresh, paypaltest.Good, "tx-retry-2", body)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		require.EqualValues(t, 1, h.down.calls.Load())
		require.EqualValues(t, 2, fresh.Fetches.Load())
	})
}

// requestBound verifies only with the request's own context.
type requestBound struct{}

func (requestBound) Name() string { return "bound" }
func (requestBound) Parse(d providers.Delivery) ([]providers.Item, error) {
	return []providers.Item{{Event: providers.Event{Key: "k1", Fingerprint: "f"}, Body: d.Body}}, nil
}
func (requestBound) Ack() *providers.Acknowledgement { return nil }
func (requestBound) Sign([]byte) (providers.Delivery, error) {
	return providers.Delivery{}, providers.ErrCannotSign
}
func (requestBound) Verify(ctx context.Context, _ providers.Delivery) error {
	if ctx.Value(http.ServerContextKey) == nil {
		return providers.ErrUnauthorized
	}
	return nil
}

// TestVerifyGetsTheRequestContext: the receiver verifies with the
// request's context (so a fetch ends when the request does).
func TestVerifyGetsTheRequestContext(t *testing.T) {
	h := newHarness(t, withProviders(requestBound{}))
	r := h.sendAs("bound", []byte(`{}`), http.Header{"Content-Type": {"application/json"}})
	require.Equal(t, http.StatusCreated, r.status, r.body)
}

// queryKeyed keys each delivery on its URL query's id, as a gateway that
// signs a query value would.
type queryKeyed struct{ requestBound }

func (queryKeyed) Name() string { return "query" }
func (queryKeyed) Parse(d providers.Delivery) ([]providers.Item, error) {
	return []providers.Item{{Event: providers.Event{Key: d.Query.Get("id"), Fingerprint: "f"}, Body: d.Body}}, nil
}

// twoEvents answers every request with two items but no acknowledgement.
type twoEvents struct{ requestBound }

func (twoEvents) Name() string { return "two" }
func (twoEvents) Parse(d providers.Delivery) ([]providers.Item, error) {
	it := providers.Item{Event: providers.Event{Key: "k1", Fingerprint: "f"}, Body: d.Body}
	other := it
	other.Key = "k2"
	return []providers.Item{it, other}, nil
}

// TestOnePath: the adapter is given the request's query; a provider
// without an acknowledgement, whose answer is the core's, cannot carry
// several events in one request: 400, nothing forwarded.
func TestOnePath(t *testing.T) {
	h := newHarness(t, withProviders(queryKeyed{}, twoEvents{}))
	send := func(path string) reply {
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+path, strings.NewReader(`{}`))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return reply{resp.StatusCode, resp.Header, string(b)}
	}
	require.Equal(t, http.StatusCreated, send("query?id=evt_q1").status)
	require.Equal(t, http.StatusBadRequest, send("query").status, "no id in the query, no key")
	r := send("two")
	require.Equal(t, http.StatusBadRequest, r.status, r.body)
	require.EqualValues(t, 1, h.down.calls.Load())
	require.Zero(t, h.state("two:k1"))
}

// itemCount is a verified provider whose Parse returns n items, and whose
// Ack is ack.
type itemCount struct {
	n   int
	ack *providers.Acknowledgement
}

func (p itemCount) Name() string { return "count" }
func (p itemCount) Parse(d providers.Delivery) ([]providers.Item, error) {
	items := make([]providers.Item, p.n)
	for i := range items {
		items[i] = providers.Item{Event: providers.Event{Key: fmt.Sprintf("k%d", i), Fingerprint: "f"}, Body: d.Body}
	}
	return items, nil
}
func (p itemCount) Ack() *providers.Acknowledgement { return p.ack }
func (itemCount) Sign([]byte) (providers.Delivery, error) {
	return providers.Delivery{}, providers.ErrCannotSign
}
func (itemCount) Verify(context.Context, providers.Delivery) error { return nil }

// TestItemCountOfTheOnePath: a provider without an acknowledgement must
// give exactly one item, and a batch provider at least one; otherwise the
// request is 400 and nothing is claimed or forwarded (a batch of none is
// never acknowledged).
func TestItemCountOfTheOnePath(t *testing.T) {
	ack := &providers.Acknowledgement{Status: http.StatusOK, Body: []byte("ok")}
	tests := []struct {
		name string
		p    itemCount
		want int
	}{
		{"single, none", itemCount{0, nil}, http.StatusBadRequest},
		{"single, two", itemCount{2, nil}, http.StatusBadRequest},
		{"batch, none", itemCount{0, ack}, http.StatusBadRequest},
		{"single, one", itemCount{1, nil}, http.StatusCreated},
		{"batch, two", itemCount{2, ack}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withProviders(tt.p))
			r := h.sendAs("count", []byte(`{}`), http.Header{"Content-Type": {"application/json"}})
			require.Equal(t, tt.want, r.status, r.body)
			if tt.want == http.StatusBadRequest {
				require.Zero(t, h.down.calls.Load())
				require.Empty(t, h.records())
			}
		})
	}
}
