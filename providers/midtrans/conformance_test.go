package midtrans_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(key string, _ func() time.Time) (providers.Provider, error) {
			return midtrans.New(key)
		},
		Secret:         "SB-Mid-server-conformance-a",
		OtherSecret:    "SB-Mid-server-conformance-b",
		Fixtures:       fixtures,
		SignatureField: midtrans.SignatureField,
		SignedFields:   []string{"order_id", "status_code", "gross_amount"},
	})
}
