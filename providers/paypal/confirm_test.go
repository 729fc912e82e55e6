package paypal_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
	"github.com/webhookd/webhookd/providers/providertest"
)

const (
	clientID     = "AeTestClientId"
	clientSecret = "EFTestClientSecret"
)

// fakeAPI is PayPal's REST API as Confirm uses it: the client credentials
// token and the webhook event lookup, over plain http on loopback.
type fakeAPI struct {
	*httptest.Server
	mu        sync.Mutex
	events    map[string][]byte // by id, as PayPal stores them
	tokens    atomic.Int32      // token requests answered 200
	lookups   atomic.Int32
	expiresIn int
	status    atomic.Int32 // forced status of every answer when set
	delay     time.Duration
	revoked   atomic.Bool // the current token is refused by the lookup
	issued    atomic.Int32
	done      chan struct{} // closed when the test ends, before Close
}

func newFakeAPI(t *testing.T, events ...[]byte) *fakeAPI {
	t.Helper()
	f := &fakeAPI{events: map[string][]byte{}, expiresIn: 32400, done: make(chan struct{})}
	for _, e := range events {
		o, err := rawjson.Parse(e)
		require.NoError(t, err)
		id, _, _ := o.String("id")
		f.events[id] = e
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	t.Cleanup(func() { close(f.done) }) // runs first
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		}
	}
	if s := f.status.Load(); s != 0 {
		w.WriteHeader(int(s))
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/oauth2/token":
		id, secret, ok := r.BasicAuth()
		_ = r.ParseForm()
		if !ok || id != clientID || secret != clientSecret || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		f.tokens.Add(1)
		n := f.issued.Add(1)
		f.revoked.Store(false)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"scope":"https://uri.paypal.com/services/applications/webhooks","access_token":"A21AA` + strings.Repeat("x", int(n)) + `","token_type":"Bearer","app_id":"APP-1","expires_in":` + itoa(f.expiresIn) + `,"nonce":"n"}`))
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/notifications/webhooks-events/"):
		f.lookups.Add(1)
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer A21AA") || f.revoked.Load() {
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		e, ok := f.events[strings.TrimPrefix(r.URL.Path, "/v1/notifications/webhooks-events/")]
		f.mu.Unlock()
		if !ok {
			http.Error(w, `{"name":"INVALID_RESOURCE_ID"}`, http.StatusNotFound)
			return
		}
		_, _ = w.Write(e)
	default:
		http.NotFound(w, r)
	}
}

func itoa(n int) string {
	b := []byte{}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	if len(b) == 0 {
		return "0"
	}
	return string(b)
}

func confirming(t *testing.T, api *fakeAPI, opts ...paypal.Option) *paypal.Adapter {
	t.Helper()
	a, err := paypal.New([]string{webhookID}, append([]paypal.Option{paypal.WithConfirmation(api.URL, clientID, clientSecret)}, opts...)...)
	require.NoError(t, err)
	return a
}

// TestConfirmRefusesCRCForgery is the attack end to end: a genuine
// PAYMENT.CAPTURE.DENIED delivery is rewritten into a COMPLETED one (under
// its own id, or a new one) with its CRC-32 forced back. Its genuine
// headers verify it on a node that has not seen the genuine body; Confirm,
// which asks PayPal for the event, refuses it either way, and confirms the
// genuine one.
func TestConfirmRefusesCRCForgery(t *testing.T) {
	srv := paypaltest.NewServer(t)
	denied := readFixture(t, "payment_capture_denied.json")
	completed := readFixture(t, "payment_capture_completed.json")
	api := newFakeAPI(t, denied, completed)
	h := srv.Sign(paypaltest.Good, webhookID, "tx-denied", time.Now(), denied)

	for _, tt := range []struct {
		name    string
		replace []string
		err     error
	}{
		{"same id, completed", []string{"PAYMENT.CAPTURE.DENIED", "PAYMENT.CAPTURE.COMPLETED", `"status":"DECLINED"`, `"status":"COMPLETED"`}, paypal.ErrEventMismatch},
		{"a new id, completed", []string{"WH-9EV36650JT4471808-2KC15584WR6603917", "WH-1FORGED0000000000-0000000000000000", "PAYMENT.CAPTURE.DENIED", "PAYMENT.CAPTURE.COMPLETED", `"status":"DECLINED"`, `"status":"COMPLETED"`}, paypal.ErrEventUnknown},
		{"another genuine event's id, another amount", []string{"WH-9EV36650JT4471808-2KC15584WR6603917", "WH-7WD58212KL104362H-4RH63195UV8822031", `"value":"60.00"`, `"value":"6000.00"`}, paypal.ErrEventMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			forged := forgeEvent(t, denied, `"summary":"`, tt.replace...)
			a := confirming(t, api, srv.Options()...)
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: forged}), "the genuine headers verify the forged body")
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: forged}))
			require.NoError(t, err)
			err = a.Confirm(context.Background(), providers.Item{Event: ev, Body: forged})
			require.ErrorIs(t, err, tt.err)
			if tt.err == paypal.ErrEventMismatch {
				require.ErrorIs(t, err, providers.ErrMismatch, "401, not forwarded")
			} else {
				require.ErrorIs(t, err, providers.ErrUnavailable, "503, not forwarded")
			}
		})
	}

	t.Run("the genuine delivery is confirmed", func(t *testing.T) {
		a := confirming(t, api, srv.Options()...)
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: denied}))
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: denied}))
		require.NoError(t, err)
		require.NoError(t, a.Confirm(context.Background(), providers.Item{Event: ev, Body: denied}))
	})
}

// TestConfirmCompares: the fields a core acts on must match PayPal's
// record; white space, member order, escapes and the members Confirm does
// not compare may differ.
func TestConfirmCompares(t *testing.T) {
	stored := readFixture(t, "payment_capture_completed.json")
	api := newFakeAPI(t, stored)
	a := confirming(t, api)
	for _, tt := range []struct {
		name     string
		old, new string
		err      error
	}{
		{"the same bytes", "", "", nil},
		{"white space and order", `{"id":"WH-7WD58212KL104362H-4RH63195UV8822031","event_version":"1.0",`, `{ "event_version": "1.0", "id" : "WH-7WD58212KL104362H-4RH63195UV8822031",`, nil},
		{"an escape", `"status":"COMPLETED"`, `"status":"COMPLET\u0045D"`, nil},
		{"summary", `Payment completed for $ 125.0 USD`, `Payment completed`, nil},
		{"links", `"rel":"resend"`, `"rel":"other"`, nil},
		{"event_type", `PAYMENT.CAPTURE.COMPLETED`, `PAYMENT.CAPTURE.REFUNDED`, paypal.ErrEventMismatch},
		{"resource_type", `"resource_type":"capture"`, `"resource_type":"refund"`, paypal.ErrEventMismatch},
		{"resource id", `"id":"5TY05013RG002845M"`, `"id":"5TY05013RG002845N"`, paypal.ErrEventMismatch},
		{"status", `"status":"COMPLETED"`, `"status":"PENDING"`, paypal.ErrEventMismatch},
		{"amount value", `"amount":{"currency_code":"USD","value":"125.00"}`, `"amount":{"currency_code":"USD","value":"125000.00"}`, paypal.ErrEventMismatch},
		{"amount currency", `"amount":{"currency_code":"USD","value":"125.00"}`, `"amount":{"currency_code":"IDR","value":"125.00"}`, paypal.ErrEventMismatch},
		{"custom_id", `"custom_id":"order-10041"`, `"custom_id":"order-99999"`, paypal.ErrEventMismatch},
		{"invoice_id", `"invoice_id":"WHD-INV-10041"`, `"invoice_id":"WHD-INV-99999"`, paypal.ErrEventMismatch},
		{"related order", `"order_id":"3KX94120BM7786207"`, `"order_id":"3KX94120BM7786208"`, paypal.ErrEventMismatch},
		{"a compared member added", `"final_capture":true`, `"final_capture":true,"state":"completed"`, paypal.ErrEventMismatch},
		{"a compared member removed", `"custom_id":"order-10041",`, ``, paypal.ErrEventMismatch},
		{"a compared member spelled another way", `"custom_id"`, `"Custom_Id"`, paypal.ErrEventMismatch},
		{"no resource", `"resource_type":"capture"`, `"resource_type":"capture","resource":null,"x":{"a"`, paypal.ErrEventMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := stored
			if tt.old != "" {
				require.True(t, bytes.Contains(stored, []byte(tt.old)), tt.old)
				body = bytes.Replace(stored, []byte(tt.old), []byte(tt.new), 1)
			}
			err := a.Confirm(context.Background(), providers.Item{Body: body})
			if tt.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.err)
		})
	}
}

// TestConfirmUnavailable: anything that keeps Confirm from an answer is
// 503 (PayPal retries), bounded in time and size; nothing is forwarded.
func TestConfirmUnavailable(t *testing.T) {
	stored := readFixture(t, "payment_capture_completed.json")
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		setup func(*fakeAPI) []paypal.Option
	}{
		{"API answers 503", func(f *fakeAPI) []paypal.Option { f.status.Store(503); return nil }},
		{"API answers 429", func(f *fakeAPI) []paypal.Option { f.status.Store(429); return nil }},
		{"API is slow", func(f *fakeAPI) []paypal.Option {
			f.delay = 10 * time.Second
			return []paypal.Option{paypal.WithConfirmTimeout(50 * time.Millisecond)}
		}},
		{"API is down", func(f *fakeAPI) []paypal.Option { f.Close(); return nil }},
		{"answer too large", func(f *fakeAPI) []paypal.Option {
			f.events["WH-7WD58212KL104362H-4RH63195UV8822031"] = bytes.Replace(stored, []byte(`"summary":"`), []byte(`"summary":"`+strings.Repeat("x", paypal.MaxAPIResponseBytes)), 1)
			return nil
		}},
		{"answer not JSON", func(f *fakeAPI) []paypal.Option {
			f.events["WH-7WD58212KL104362H-4RH63195UV8822031"] = []byte("<html>")
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, stored)
			opts := tt.setup(api)
			start := time.Now()
			err := confirming(t, api, opts...).Confirm(ctx, providers.Item{Body: stored})
			require.ErrorIs(t, err, paypal.ErrAPIUnavailable)
			require.ErrorIs(t, err, providers.ErrUnavailable)
			require.NotContains(t, err.Error(), api.URL, "no URL in answers")
			require.Less(t, time.Since(start), 5*time.Second, "bounded by the confirm timeout")
		})
	}
	t.Run("wrong credentials", func(t *testing.T) {
		api := newFakeAPI(t, stored)
		a, err := paypal.New([]string{webhookID}, paypal.WithConfirmation(api.URL, clientID, "wrong"))
		require.NoError(t, err)
		err = a.Confirm(ctx, providers.Item{Body: stored})
		require.ErrorIs(t, err, paypal.ErrAPIUnavailable)
		require.NotContains(t, err.Error(), "wrong")
	})
	t.Run("unknown event", func(t *testing.T) {
		api := newFakeAPI(t)
		err := confirming(t, api).Confirm(ctx, providers.Item{Body: stored})
		require.ErrorIs(t, err, paypal.ErrEventUnknown)
		require.ErrorIs(t, err, providers.ErrUnavailable)
	})
}

// TestConfirmToken: one token for many confirmations, a new one once it
// expires (a minute early) or is refused.
func TestConfirmToken(t *testing.T) {
	stored := readFixture(t, "payment_capture_completed.json")
	api := newFakeAPI(t, stored)
	api.expiresIn = 3600
	now := time.Now()
	clock := now
	a := confirming(t, api, paypal.WithClock(func() time.Time { return clock }))
	ctx := context.Background()
	for range 3 {
		require.NoError(t, a.Confirm(ctx, providers.Item{Body: stored}))
	}
	require.EqualValues(t, 1, api.tokens.Load())
	require.EqualValues(t, 3, api.lookups.Load())

	clock = now.Add(59*time.Minute + time.Second)
	require.NoError(t, a.Confirm(ctx, providers.Item{Body: stored}))
	require.EqualValues(t, 2, api.tokens.Load(), "renewed a minute before it expires")

	api.revoked.Store(true)
	require.ErrorIs(t, a.Confirm(ctx, providers.Item{Body: stored}), paypal.ErrAPIUnavailable)
	require.NoError(t, a.Confirm(ctx, providers.Item{Body: stored}), "the next one gets a new token")
	require.EqualValues(t, 3, api.tokens.Load())
}

func TestConfirmOffByDefault(t *testing.T) {
	a, err := paypal.New([]string{webhookID}, paypal.WithClient(&http.Client{Transport: failing{}}))
	require.NoError(t, err)
	require.NoError(t, a.Confirm(context.Background(), providers.Item{Body: []byte("not even JSON")}))
}

func TestWithConfirmationRefuses(t *testing.T) {
	for _, tt := range []struct{ name, url, id, secret string }{
		{"plain http to another host", "http://api-m.paypal.com", clientID, clientSecret},
		{"credentials in the URL", "https://u:p@api-m.paypal.com", clientID, clientSecret},
		{"a query", "https://api-m.paypal.com?x=1", clientID, clientSecret},
		{"not absolute", "api-m.paypal.com", clientID, clientSecret},
		{"no client id", paypal.DefaultAPIURL, "", clientSecret},
		{"no client secret", paypal.DefaultAPIURL, clientID, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := paypal.New([]string{webhookID}, paypal.WithConfirmation(tt.url, tt.id, tt.secret))
			require.Error(t, err)
			require.NotContains(t, err.Error(), clientSecret)
		})
	}
}
