package midtrans_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/providertest"
)

// statusAPI is a local stand-in for Midtrans's GET status API. It checks the
// method and the Basic auth header as Midtrans does, records each request,
// and answers with handle.
type statusAPI struct {
	*httptest.Server
	mu     sync.Mutex
	paths  []string
	auths  []string
	handle http.HandlerFunc
}

func newStatusAPI(t *testing.T, handle http.HandlerFunc) *statusAPI {
	s := &statusAPI{handle: handle}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(testKey+":"))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.EscapedPath())
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		s.mu.Unlock()
		switch {
		case r.Method != http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.Header.Get("Authorization") != wantAuth:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"status_code":"401","status_message":"Unknown Merchant server_key/id"}`)
		default:
			s.handle(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *statusAPI) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.paths)
}

// answer is a GET status answer for the card fixtures' transaction.
func answer(status, fraud string) string {
	fraudField := ""
	if fraud != "" {
		fraudField = `,"fraud_status":"` + fraud + `"`
	}
	return `{"status_code":"200","status_message":"Success, transaction is found",` +
		`"transaction_id":"0b9e4d2a-71c5-4f60-a8d3-5e2f1c9b7a04","order_id":"WH-ORDER-2042","gross_amount":"1250000.00",` +
		`"currency":"IDR","payment_type":"credit_card","transaction_time":"2026-03-14 13:40:02",` +
		`"transaction_status":"` + status + `"` + fraudField + `,"signature_key":"` + strings.Repeat("0", 128) + `"}`
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func TestConfirm(t *testing.T) {
	challenge := readFixture(t, "credit_card_capture_challenge.json")
	accept := readFixture(t, "credit_card_capture_accept.json")
	noFraud := func(t *testing.T) []byte {
		return replaceOnce(t, clone(accept), `"fraud_status": "accept",`, ``)
	}
	tests := []struct {
		name    string
		body    func(t *testing.T) []byte
		key     string // default testKey
		handle  http.HandlerFunc
		wantErr error
	}{
		{name: "status and fraud status match", handle: reply(200, answer("capture", "challenge"))},
		{name: "accept matches after the challenge was accepted", body: fixed(accept), handle: reply(200, answer("capture", "accept"))},
		{name: "status edited in a replayed notification", wantErr: midtrans.ErrStatusMismatch,
			body: func(t *testing.T) []byte {
				return replaceOnce(t, clone(accept), `"transaction_status": "capture"`, `"transaction_status": "settlement"`)
			}, handle: reply(200, answer("capture", "accept"))},
		{name: "fraud status differs", wantErr: midtrans.ErrStatusMismatch, body: fixed(accept), handle: reply(200, answer("capture", "challenge"))},
		{name: "superseded: challenge already accepted", wantErr: midtrans.ErrStatusMismatch, handle: reply(200, answer("capture", "accept"))},
		{name: "fraud status dropped while Midtrans says challenge", wantErr: midtrans.ErrStatusMismatch,
			body: noFraud, handle: reply(200, answer("capture", "challenge"))},
		{name: "fraud status dropped while Midtrans says deny", wantErr: midtrans.ErrStatusMismatch,
			body: noFraud, handle: reply(200, answer("capture", "deny"))},
		{name: "fraud status absent while Midtrans says accept", body: noFraud, handle: reply(200, answer("capture", "accept"))},
		{name: "fraud status absent on both sides", body: noFraud, handle: reply(200, answer("capture", ""))},
		{name: "fraud status present, Midtrans reports none", wantErr: midtrans.ErrStatusMismatch, handle: reply(200, answer("capture", ""))},
		{name: "another order's transaction", wantErr: midtrans.ErrStatusMismatch,
			handle: reply(200, strings.Replace(answer("capture", "challenge"), "WH-ORDER-2042", "WH-ORDER-9999", 1))},
		{name: "another gross_amount", wantErr: midtrans.ErrStatusMismatch,
			handle: reply(200, strings.Replace(answer("capture", "challenge"), `"gross_amount":"1250000.00"`, `"gross_amount":"250000.00"`, 1))},
		{name: "the same gross_amount spelled as a number", handle: reply(200, strings.Replace(answer("capture", "challenge"), `"gross_amount":"1250000.00"`, `"gross_amount":1250000`, 1))},
		{name: "answer without gross_amount", handle: reply(200, strings.Replace(answer("capture", "challenge"), `"gross_amount":"1250000.00",`, ``, 1))},
		{name: "answer without order_id", wantErr: midtrans.ErrStatusMismatch,
			handle: reply(200, strings.Replace(answer("capture", "challenge"), `"order_id":"WH-ORDER-2042",`, ``, 1))},
		{name: "answer for another transaction_id", wantErr: midtrans.ErrStatusMismatch,
			handle: reply(200, strings.Replace(answer("capture", "challenge"), "0b9e4d2a-", "1b9e4d2a-", 1))},
		{name: "404", wantErr: midtrans.ErrUnknownTransaction,
			handle: reply(404, `{"status_code":"404","status_message":"Transaction doesn't exist."}`)},
		{name: "404 in a 200 answer", wantErr: midtrans.ErrUnknownTransaction,
			handle: reply(200, `{"status_code":"404","status_message":"Transaction doesn't exist."}`)},
		{name: "500", wantErr: midtrans.ErrStatusUnavailable, handle: reply(500, `{"status_code":"500"}`)},
		{name: "503", wantErr: midtrans.ErrStatusUnavailable, handle: reply(503, ``)},
		{name: "429", wantErr: midtrans.ErrStatusUnavailable, handle: reply(429, ``)},
		{name: "wrong server key: the API answers 401", key: "SB-Mid-server-wrong", wantErr: midtrans.ErrStatusUnavailable,
			handle: reply(200, answer("capture", "challenge"))},
		{name: "401 in a 200 answer", wantErr: midtrans.ErrStatusUnavailable,
			handle: reply(200, `{"status_code":"401","status_message":"Access denied"}`)},
		{name: "answer not JSON", wantErr: midtrans.ErrStatusUnavailable, handle: reply(200, `<html>maintenance</html>`)},
		{name: "answer with a numeric status", wantErr: midtrans.ErrStatusUnavailable,
			handle: reply(200, strings.Replace(answer("capture", "challenge"), `"transaction_status":"capture"`, `"transaction_status":7`, 1))},
		{name: "answer too large", wantErr: midtrans.ErrStatusUnavailable,
			handle: reply(200, strings.Replace(answer("capture", "challenge"), `"currency"`, `"pad":"`+strings.Repeat("x", midtrans.MaxStatusResponseBytes)+`","currency"`, 1))},
		{name: "redirect is not followed", wantErr: midtrans.ErrStatusUnavailable,
			handle: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/v2/elsewhere/status", http.StatusFound)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newStatusAPI(t, tt.handle)
			key := tt.key
			if key == "" {
				key = testKey
			}
			a := newAdapter(t, key, midtrans.WithStatusCheck(api.URL))
			body := challenge
			if tt.body != nil {
				body = tt.body(t)
			}
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
			require.NoError(t, err)
			err = a.Confirm(context.Background(), providers.Item{Event: ev, Body: body})
			require.Equal(t, 1, api.requests(), "one GET, no redirect followed")
			require.Equal(t, "/v2/0b9e4d2a-71c5-4f60-a8d3-5e2f1c9b7a04/status", api.paths[0])
			require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte(key+":")), api.auths[0])
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			for _, s := range []string{key, base64.StdEncoding.EncodeToString([]byte(key + ":")), api.URL} {
				require.NotContains(t, err.Error(), s, "errors must not quote the key or the API")
			}
		})
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func fixed(b []byte) func(*testing.T) []byte { return func(*testing.T) []byte { return b } }

func TestConfirmHang(t *testing.T) {
	unblock := make(chan struct{})
	api := newStatusAPI(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	defer close(unblock)
	a := newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL), midtrans.WithStatusTimeout(100*time.Millisecond))
	body := readFixture(t, "credit_card_capture_challenge.json")
	start := time.Now()
	err := a.Confirm(context.Background(), providers.Item{Body: body})
	require.ErrorIs(t, err, midtrans.ErrStatusUnavailable)
	require.ErrorIs(t, err, providers.ErrUnavailable)
	require.Less(t, time.Since(start), 5*time.Second, "bounded by the status timeout")
}

func TestConfirmUnreachable(t *testing.T) {
	api := newStatusAPI(t, reply(200, answer("capture", "challenge")))
	url := api.URL
	api.Close()
	a := newAdapter(t, testKey, midtrans.WithStatusCheck(url))
	err := a.Confirm(context.Background(), providers.Item{Body: readFixture(t, "credit_card_capture_challenge.json")})
	require.ErrorIs(t, err, midtrans.ErrStatusUnavailable)
	require.NotContains(t, err.Error(), url)
}

func TestConfirmCanceled(t *testing.T) {
	api := newStatusAPI(t, reply(200, answer("capture", "challenge")))
	a := newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.Confirm(ctx, providers.Item{Body: readFixture(t, "credit_card_capture_challenge.json")})
	require.ErrorIs(t, err, midtrans.ErrStatusUnavailable)
}

func TestConfirmDisabled(t *testing.T) {
	api := newStatusAPI(t, reply(500, ``))
	a := newAdapter(t, testKey) // no WithStatusCheck
	var c providers.Confirmer = a
	require.NoError(t, c.Confirm(context.Background(), providers.Item{Body: readFixture(t, "credit_card_capture_challenge.json")}))
	require.Zero(t, api.requests())
}

func TestConfirmURL(t *testing.T) {
	tests := []struct {
		name     string
		base     string // appended to the stub's URL
		txID     string
		wantPath string
	}{
		{"base with a path prefix", "/midtrans/", "t-1", "/midtrans/v2/t-1/status"},
		{"id escaped as one path segment", "", "a/b?c#d%", "/v2/a%2Fb%3Fc%23d%25/status"},
		{"dots inside an id are kept", "", "a..b", "/v2/a..b/status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newStatusAPI(t, reply(200, `{"transaction_status":"settlement","order_id":"o-1"}`))
			a := newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL+tt.base))
			body := []byte(`{"order_id":"o-1","transaction_id":"` + tt.txID + `","transaction_status":"settlement"}`)
			require.NoError(t, a.Confirm(context.Background(), providers.Item{Body: body}))
			require.Equal(t, []string{tt.wantPath}, api.paths)
		})
	}
	t.Run("dot segments are refused without a request", func(t *testing.T) {
		api := newStatusAPI(t, reply(200, `{"transaction_status":"settlement","order_id":"o-1"}`))
		a := newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL))
		for _, id := range []string{".", ".."} {
			body := []byte(`{"order_id":"o-1","transaction_id":"` + id + `","transaction_status":"settlement"}`)
			require.ErrorIs(t, a.Confirm(context.Background(), providers.Item{Body: body}), midtrans.ErrUnknownTransaction)
		}
		require.Zero(t, api.requests())
	})
}

// TestConfirmConcurrent runs many confirmations at once on one adapter, for
// the race detector.
func TestConfirmConcurrent(t *testing.T) {
	api := newStatusAPI(t, reply(200, answer("capture", "challenge")))
	a := newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL))
	body := readFixture(t, "credit_card_capture_challenge.json")
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if err := a.Confirm(context.Background(), providers.Item{Body: body}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 16, api.requests())
}
