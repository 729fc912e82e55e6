package standard_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/standard"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
			return standard.New(secrets, standard.DefaultTolerance, standard.WithClock(now))
		},
		Secrets:   [2]string{secretA, secretB},
		Tolerance: standard.DefaultTolerance,
		Fixtures:  fixtures,
		// A retry resends the same body under the same webhook-id, with a
		// new timestamp and signature: Retry is nil (the body unchanged)
		// and Resend signs the same id again.
		Resend: func(p providers.Provider, first providers.Delivery, body []byte) (providers.Delivery, error) {
			h, err := p.(*standard.Adapter).SignMessage(first.Header.Get(standard.HeaderID), body)
			return providers.Delivery{Header: h, Body: body}, err
		},
		Change: providertest.ChangeAmount("amount"),
		Examples: []providertest.Example{{
			Source:   "https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_test.go (TestWebhookSign)",
			Secret:   vecSecret,
			Now:      vecNow,
			Delivery: providers.Delivery{Header: vecHeader(), Body: []byte(vecBody)},
			Keys:     []string{vecID},
		}},
	})
}
