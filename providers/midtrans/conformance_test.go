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
		New: func(keys []string, _ func() time.Time) (providers.Provider, error) {
			return midtrans.New(keys[0])
		},
		Secrets:        [2]string{"SB-Mid-server-conformance-a", "SB-Mid-server-conformance-b"},
		SingleSecret:   "a Midtrans account has one server key, configured alone (WEBHOOKD_MIDTRANS_SERVER_KEY)",
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
		Examples: []providertest.Example{{
			Source:   "https://docs.midtrans.com/reference/handle-notifications (PHP sample inputs; signature computed with hashlib and openssl)",
			Secret:   docsKey,
			Delivery: providers.Delivery{Body: note(q("1111"), q("200"), q("100000.00"), q(docsSig))},
		}},
	})
}
