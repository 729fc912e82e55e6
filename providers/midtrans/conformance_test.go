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
		// The key and type come from unsigned members: Confirm checks them
		// with Midtrans's GET status API when WEBHOOKD_MIDTRANS_VERIFY_STATUS
		// is on (confirm_test.go), and serve warns while it is off.
		ConfirmedFields: []string{"transaction_id", "transaction_status", "fraud_status", "refund_key"},
		// Midtrans may serialise a notification's members in another order
		// and "always expect new fields will be added to the notification
		// body": neither makes a retry another event.
		Retry: providertest.Chain(providertest.Reordered,
			providertest.WithMember("added_later", `{"note":"a field Midtrans added since the first attempt"}`)),
		// gross_amount is signed; Sign computes signature_key again.
		Change: providertest.ChangeAmount("gross_amount"),
	})
}
