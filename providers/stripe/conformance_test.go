package stripe_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/stripe"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
			return stripe.New(secrets, tolerance, stripe.WithClock(now))
		},
		Secrets:   [2]string{"whsec_conformance_a", "whsec_conformance_b"},
		Tolerance: tolerance,
		Fixtures:  "../../fixtures/stripe",
		Retry:     providertest.BumpPendingWebhooks,
		// checkout.session events carry amount_total, not amount.
		Change: providertest.ChangeAmount("amount", "amount_total"),
		SelfDerived: "stripe-go's tests sign with time.Now() and Stripe's docs print a header without its secret or body: " +
			"no fixed vector is published, so the example pairs stripe-go's test secret and a body with a signature " +
			"recomputed by stripe-go's ComputeSignature, Python's hmac and openssl",
		Examples: []providertest.Example{{
			Source:   "https://github.com/stripe/stripe-go/blob/master/webhook/client_test.go (secret; signature recomputed)",
			Secret:   vecSecret,
			Now:      vecNow,
			Delivery: providers.Delivery{Header: http.Header{stripe.HeaderName: {vecRotationHeader}}, Body: []byte(vecBody)},
			Keys:     []string{"evt_test_webhook"},
		}},
	})
}
