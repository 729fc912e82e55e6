package razorpay_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/razorpay"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secrets []string, _ func() time.Time) (providers.Provider, error) {
			return razorpay.New(secrets)
		},
		Secrets:  [2]string{secretA, secretB},
		Fixtures: fixtures,
		// A retry, or a dashboard replay signed with the current secret,
		// is the same event; members in another order or a member Razorpay
		// added since must not make it a different payload.
		Retry: providertest.Chain(providertest.Reordered,
			providertest.WithMember("added_later", `{"note":"a member Razorpay added since the first attempt"}`)),
		Change: providertest.ChangeAmount("amount"),
		Examples: []providertest.Example{{
			Source:   "https://github.com/razorpay/razorpay-go/blob/master/resources/verify_payment_test.go (TestVerifyWebhookSignature)",
			Secret:   vecSecret,
			Delivery: providers.Delivery{Header: http.Header{razorpay.HeaderName: {vecSignature}}, Body: []byte(vecBody)},
			Keys:     []string{"payment.authorized:pay_JUEM4c0pSLpFEW:1652339806"},
		}},
	})
}
