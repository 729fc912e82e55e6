package standard_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/standard"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(secret string, now func() time.Time) (providers.Provider, error) {
			return standard.New([]string{secret}, standard.DefaultTolerance, standard.WithClock(now))
		},
		Secret:      secretA,
		OtherSecret: secretB,
		Fixtures:    fixtures,
		// A retry resends the same body under the same webhook-id, with a
		// new timestamp and signature: Retry is nil (the body unchanged)
		// and Resend signs the same id again.
		Resend: func(p providers.Provider, first http.Header, body []byte) ([]byte, http.Header, error) {
			h, err := p.(*standard.Adapter).SignMessage(first.Get(standard.HeaderID), body)
			return body, h, err
		},
		Change: providertest.ChangeAmount("amount"),
	})
}
