package spec

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
)

// The conformance kit, run on the built-in gateways whose key is an event id
// in the signed body. The kit's "changed payload, same key" check cannot
// apply to a key that is a digest of the body (Shopify, Lemon Squeezy,
// Paystack, Flutterwave: any change is another event), nor to a key from
// the query (Mercado Pago); and its batch checks expect every item to be
// signed on its own (Adyen), while GoCardless signs the request as a whole,
// so a forwarded element cannot verify under the request's signature.
// gateways_test.go covers those.

// attemptNumber matches Coinbase Commerce's delivery counter.
var attemptNumber = regexp.MustCompile(`"attempt_number":\s*([0-9]+)`)

// nextAttempt is Coinbase Commerce's own retry: the envelope counts the
// attempt; the event is unchanged.
func nextAttempt(body []byte) []byte {
	return attemptNumber.ReplaceAllFunc(body, func(m []byte) []byte {
		n, err := strconv.Atoi(string(attemptNumber.FindSubmatch(m)[1]))
		if err != nil {
			return m
		}
		return []byte(`"attempt_number": ` + strconv.Itoa(n+1))
	})
}

// replaceFirst returns a Kit.Change that replaces the first old with new.
func replaceFirst(old, new string) func([]byte) []byte {
	return func(body []byte) []byte { return bytes.Replace(body, []byte(old), []byte(new), 1) }
}

func TestGatewayConformance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		retry    func([]byte) []byte
		change   func([]byte) []byte
	}{
		{name: "square", settings: map[string]string{"NOTIFICATION_URL": "https://pay.example.com/webhooks/square"},
			retry: providertest.Reordered, change: providertest.ChangeAmount("amount")},
		{name: "checkout", retry: providertest.WithMember("version_note", `"resent"`), change: providertest.ChangeAmount("amount")},
		{name: "mollie", retry: providertest.Reordered, change: replaceFirst(`"entityId": "`, `"entityId": "x`)},
		{name: "coinbase", retry: nextAttempt, change: providertest.ChangeAmount("amount")},
		{name: "airwallex", retry: providertest.Reordered, change: providertest.ChangeAmount("amount")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := builtinSpec(t, tc.name)
			providertest.Run(t, providertest.Kit{
				New: func(secret string, now func() time.Time) (providers.Provider, error) {
					p, err := s.New([]string{secret}, tc.settings, now)
					if err != nil {
						return nil, err
					}
					return legacy(p), nil
				},
				Secret:      tc.name + "-conformance-a",
				OtherSecret: tc.name + "-conformance-b",
				Fixtures:    filepath.Join("..", "..", "fixtures", tc.name),
				Retry:       tc.retry,
				Change:      tc.change,
			})
		})
	}
}
