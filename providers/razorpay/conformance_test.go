package razorpay_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/razorpay"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secret string, _ func() time.Time) (providers.Provider, error) {
			return razorpay.New([]string{secret})
		},
		Secret:      secretA,
		OtherSecret: secretB,
		Fixtures:    fixtures,
		// A retry, or a dashboard replay signed with the current secret,
		// is the same event; members in another order or a member Razorpay
		// added since must not make it a different payload.
		Retry: providertest.Chain(providertest.Reordered,
			providertest.WithMember("added_later", `{"note":"a member Razorpay added since the first attempt"}`)),
		Change: providertest.ChangeAmount("amount"),
	})
}
