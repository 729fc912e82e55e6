package stripe_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/stripe"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secret string, now func() time.Time) (providers.Provider, error) {
			return stripe.New([]string{secret}, tolerance, stripe.WithClock(now))
		},
		Secret:      vecSecret,
		OtherSecret: vecSecretRolled,
		Fixtures:    "../../fixtures/stripe",
		Retry:       providertest.BumpPendingWebhooks,
		// checkout.session events carry amount_total, not amount.
		Change: providertest.ChangeAmount("amount", "amount_total"),
	})
}
