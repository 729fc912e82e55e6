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
		New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
			// A notification path other than webhookd's route: what is
			// signed is the configured path.
			return doku.New(vecClientID, secrets, doku.WithClock(now), doku.WithNotificationPath("/payments/doku/notify"))
		},
		Secrets:   [2]string{vecSecret, "SK-EXAMPLE-OTHER-NOT-REAL"},
		Tolerance: doku.DefaultTolerance,
		Fixtures:  fixtures,
		// DOKU's retries carry a new Request-Id and Request-Timestamp
		// (Sign makes both afresh); the body may come with its members in
		// another order and with fields DOKU added since.
		Retry: providertest.Chain(providertest.Reordered,
			providertest.WithMember("additional_info", `{"note":"a field DOKU added since the first attempt"}`)),
		Change: providertest.ChangeAmount("amount"),
		SelfDerived: "DOKU never pairs a secret key with a signature in its SDKs' tests or documentation: " +
			"the example is DOKU's published notification sample, signed with a made-up key by the algorithm of " +
			"jokul-php-library Utils::generateSignature and recomputed with Python's hmac and Node's crypto",
		Examples: []providertest.Example{{
			Source: "https://developers.doku.com (HTTP Notification Sample - Non SNAP, virtual account; signature self-derived)",
			Secret: vecSecret,
			// The notification path is signed: the example's Request-Target.
			New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
				return doku.New(vecClientID, secrets, doku.WithClock(now), doku.WithNotificationPath(vecTarget))
			},
			Now:      vecTime,
			Delivery: providers.Delivery{Header: vecHeader(), Body: []byte(vecBody)},
		}},
	})
}
