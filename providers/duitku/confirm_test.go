package duitku_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/providertest"
)

// statusAPI is a local stand-in for Duitku's transaction status API: it
// checks the method, path, content type and request signature as Duitku
// does, records each request's merchantOrderId, and answers with handle.
type statusAPI struct {
	*httptest.Server
	mu     sync.Mutex
	orders []string
	handle func(w http.ResponseWriter, order string)
}

func newStatusAPI(t *testing.T, handle func(w http.ResponseWriter, order string)) *statusAPI {
	s := &statusAPI{handle: handle}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ MerchantCode, MerchantOrderID, Signature string }
		err := json.NewDecoder(r.Body).Decode(&req)
		s.mu.Lock()
		s.orders = append(s.orders, req.MerchantOrderID)
		s.mu.Unlock()
		switch {
		case r.Method != http.MethodPost || r.URL.Path != duitku.StatusPath || r.Header.Get("Content-Type") != "application/json" || err != nil:
			w.WriteHeader(http.StatusBadRequest)
		case req.MerchantCode != fixtureMerchant || req.Signature != duitku.StatusSignature(fixtureMerchant, req.MerchantOrderID, fixtureKey):
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"Message":"Wrong signature"}`)
		default:
			s.handle(w, req.MerchantOrderID)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *statusAPI) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.orders)
}

// status answers as Duitku's API does for one transaction.
func status(order, ref, amount, code string) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, _ string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"merchantOrderId":%q,"reference":%q,"amount":%q,"fee":"0.00","statusCode":%q,"statusMessage":"x"}`, order, ref, amount, code)
	}
}

// The failed card callback of fixtures/duitku/credit_card_failed.json.
const (
	failedOrder  = "INV-2024-000732"
	failedRef    = "DS1578224L3RB7YD2C6XGF"
	failedAmount = "275000"
)

func confirming(t *testing.T, api string, opts ...duitku.Option) *duitku.Adapter {
	t.Helper()
	a, err := duitku.New(fixtureMerchant, []string{fixtureKey}, append([]duitku.Option{duitku.WithStatusCheck(api)}, opts...)...)
	require.NoError(t, err)
	return a
}

// confirm runs a delivery through the adapter as the receiver does:
// Verify, Parse, then Confirm.
func confirm(t *testing.T, a *duitku.Adapter, body []byte) (providers.Event, error) {
	t.Helper()
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}), "the signature must verify: the attack keeps every signed field")
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
	require.NoError(t, err)
	return ev, a.Confirm(context.Background(), providers.Item{Event: ev, Body: body})
}

// attack is the reviewer's forgery: a genuine failed callback re-sent
// with resultCode=00 and reference=ATTACK, the signature left as it was.
func attack(t *testing.T) []byte {
	body := string(signedFixture(t, "credit_card_failed.json"))
	body = strings.Replace(body, "resultCode=01", "resultCode=00", 1)
	body = strings.Replace(body, "reference="+failedRef, "reference=ATTACK", 1)
	return []byte(body)
}

func signedFixture(t *testing.T, name string) []byte {
	t.Helper()
	signed, err := newAdapter(t, fixtureMerchant, fixtureKey).Sign(readFixture(t, name))
	body := signed.Body
	require.NoError(t, err)
	return body
}

func TestConfirmRefusesTheForgedSuccess(t *testing.T) {
	api := newStatusAPI(t, status(failedOrder, failedRef, failedAmount, "02"))
	a := confirming(t, api.URL)

	ev, err := confirm(t, a, attack(t))
	require.Equal(t, failedOrder+":ATTACK:00", ev.Key, "without the check, a new key and type 00")
	require.ErrorIs(t, err, duitku.ErrStatusMismatch)
	require.ErrorIs(t, err, providers.ErrMismatch, "the receiver answers 401")

	// Each half of the forgery is refused on its own.
	only00 := strings.Replace(string(signedFixture(t, "credit_card_failed.json")), "resultCode=01", "resultCode=00", 1)
	_, err = confirm(t, a, []byte(only00))
	require.ErrorIs(t, err, providers.ErrMismatch, "resultCode=00 while Duitku says failed")
	onlyRef := strings.Replace(string(signedFixture(t, "credit_card_failed.json")), "reference="+failedRef, "reference=ATTACK", 1)
	_, err = confirm(t, a, []byte(onlyRef))
	require.ErrorIs(t, err, providers.ErrMismatch, "another reference")

	// The genuine failed callback is confirmed.
	_, err = confirm(t, a, signedFixture(t, "credit_card_failed.json"))
	require.NoError(t, err)
	require.Equal(t, 4, api.requests())
}

func TestConfirm(t *testing.T) {
	success := signedFixture(t, "ovo_success.json") // INV-2024-000733, 48500, resultCode=00
	const order, ref = "INV-2024-000733", "DS1578224M9TC4NH8E1WJK"
	tests := []struct {
		name   string
		body   []byte
		answer func(http.ResponseWriter, string)
		want   error // nil when confirmed
	}{
		{"success confirmed", success, status(order, ref, "48500", "00"), nil},
		{"amount with decimals", success, status(order, ref, "48500.00", "00"), nil},
		{"success while pending", success, status(order, ref, "48500", "01"), duitku.ErrStatusMismatch},
		{"success while failed", success, status(order, ref, "48500", "02"), duitku.ErrStatusMismatch},
		{"another amount", success, status(order, ref, "48501", "00"), duitku.ErrStatusMismatch},
		{"another reference", success, status(order, "DS15782OTHER", "48500", "00"), duitku.ErrStatusMismatch},
		{"another order", success, status("INV-2024-000999", ref, "48500", "00"), duitku.ErrStatusMismatch},
		{"failed confirmed by 02", signedFixture(t, "credit_card_failed.json"), status(failedOrder, failedRef, failedAmount, "02"), nil},
		{"failed confirmed by pending 01", signedFixture(t, "credit_card_failed.json"), status(failedOrder, failedRef, failedAmount, "01"), nil},
		{"failed while success", signedFixture(t, "credit_card_failed.json"), status(failedOrder, failedRef, failedAmount, "00"), duitku.ErrStatusMismatch},
		{"unknown resultCode", []byte(strings.Replace(string(success), "resultCode=00", "resultCode=02", 1)), status(order, ref, "48500", "02"), duitku.ErrStatusMismatch},
		{"API error", success, func(w http.ResponseWriter, _ string) { w.WriteHeader(http.StatusInternalServerError) }, duitku.ErrStatusUnavailable},
		{"API 4xx", success, func(w http.ResponseWriter, _ string) { w.WriteHeader(http.StatusBadRequest) }, duitku.ErrStatusUnavailable},
		{"redirect", success, func(w http.ResponseWriter, _ string) {
			w.Header().Set("Location", "https://example.com/")
			w.WriteHeader(http.StatusFound)
		}, duitku.ErrStatusUnavailable},
		{"no statusCode", success, func(w http.ResponseWriter, _ string) { fmt.Fprint(w, `{"merchantOrderId":"INV-2024-000733"}`) }, duitku.ErrStatusUnavailable},
		{"not JSON", success, func(w http.ResponseWriter, _ string) { fmt.Fprint(w, `<html>`) }, duitku.ErrStatusUnavailable},
		{"answer too large", success, func(w http.ResponseWriter, _ string) {
			fmt.Fprintf(w, `{"statusCode":"00","pad":"%s"}`, strings.Repeat("x", duitku.MaxStatusResponseBytes))
		}, duitku.ErrStatusUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newStatusAPI(t, tt.answer)
			_, err := confirm(t, confirming(t, api.URL), tt.body)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.NotContains(t, err.Error(), api.URL, "the answer to Duitku must not name the API")
		})
	}
}

func TestConfirmNetworkDown(t *testing.T) {
	api := newStatusAPI(t, status(failedOrder, failedRef, failedAmount, "02"))
	a := confirming(t, api.URL)
	api.Close()
	_, err := confirm(t, a, signedFixture(t, "credit_card_failed.json"))
	require.ErrorIs(t, err, providers.ErrUnavailable, "503, so that Duitku retries")
	require.NotErrorIs(t, err, providers.ErrMismatch)
	require.NotContains(t, err.Error(), api.URL)
}

func TestConfirmTimeout(t *testing.T) {
	release := make(chan struct{})
	api := newStatusAPI(t, func(w http.ResponseWriter, _ string) { <-release })
	defer close(release)
	a := confirming(t, api.URL, duitku.WithStatusTimeout(100*time.Millisecond))
	start := time.Now()
	_, err := confirm(t, a, signedFixture(t, "credit_card_failed.json"))
	require.ErrorIs(t, err, duitku.ErrStatusUnavailable)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestConfirmDisabled(t *testing.T) {
	// Without WithStatusCheck, nothing is asked: the contract's behaviour
	// without network.
	_, err := confirm(t, newAdapter(t, fixtureMerchant, fixtureKey), attack(t))
	require.NoError(t, err)
}

func TestConfirmURL(t *testing.T) {
	for _, raw := range []string{"http://api.duitku.example", "ftp://x", "https://u:p@passport.duitku.com", "https://passport.duitku.com?x=1", "passport.duitku.com"} {
		_, err := duitku.New(fixtureMerchant, []string{fixtureKey}, duitku.WithStatusCheck(raw))
		require.Error(t, err, raw)
		require.NotContains(t, err.Error(), "u:p")
	}
	for _, raw := range []string{"", duitku.DefaultAPIURL, duitku.SandboxAPIURL + "/", "http://127.0.0.1:8080", "http://localhost"} {
		_, err := duitku.New(fixtureMerchant, []string{fixtureKey}, duitku.WithStatusCheck(raw))
		require.NoError(t, err, raw)
	}
	_, err := duitku.New(fixtureMerchant, []string{fixtureKey}, duitku.WithStatusTimeout(0))
	require.Error(t, err)
}

func TestStatusSignature(t *testing.T) {
	// md5("D0001" + "12345" + "732B39FC61796845775D2C4FB05332AF"), by
	// coreutils md5sum: the request signature of Duitku's own library
	// example for the callback vector's merchant and order.
	require.Equal(t, "6620b1f50d9bb82fc3d5f550d258c4c5", duitku.StatusSignature(vecMerchant, "12345", vecKey))
}
