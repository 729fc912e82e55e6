package doku_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/doku"
	"github.com/webhookd/webhookd/providers/providertest"
)

const fixtures = "../../fixtures/doku"

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secret string, now func() time.Time) (providers.Provider, error) {
			// A notification path other than webhookd's route: what is
			// signed is the configured path.
			return doku.New(vecClientID, []string{secret}, doku.WithClock(now), doku.WithNotificationPath("/payments/doku/notify"))
		},
		Secret:      vecSecret,
		OtherSecret: "SK-EXAMPLE-OTHER-NOT-REAL",
		Fixtures:    fixtures,
		// DOKU's retries carry a new Request-Id and Request-Timestamp
		// (Sign makes both afresh); the body may come with its members in
		// another order and with fields DOKU added since.
		Retry: providertest.Chain(providertest.Reordered,
			providertest.WithMember("additional_info", `{"note":"a field DOKU added since the first attempt"}`)),
		Change: providertest.ChangeAmount("amount"),
	})
}
