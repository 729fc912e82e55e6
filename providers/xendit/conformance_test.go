package xendit_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/xendit"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Kit{
		New: func(tokens []string, _ func() time.Time) (providers.Provider, error) {
			return xendit.New(tokens)
		},
		Secrets:      [2]string{token, tokenNew},
		Fixtures:     fixtures,
		BodyUnsigned: true,
		UnsignedKeyReason: "Xendit authenticates the sender with a static x-callback-token and signs no body: " +
			"whoever holds the token can send any event, so no field of the body is more trustworthy than another",
		// A dashboard resend may carry a later updated, members in another
		// order, and fields Xendit added since.
		Retry: providertest.Chain(bumpUpdated, providertest.Reordered,
			providertest.WithMember("added_later", `{"note":"a field Xendit added since the first attempt"}`)),
		// payment.capture carries captured_amount, not amount.
		Change: providertest.ChangeAmount("amount", "captured_amount"),
		SelfDerived: "Xendit authenticates with a static x-callback-token it shows in the dashboard: " +
			"there is no signature to reproduce, only the token to compare",
	})
}

var updated = regexp.MustCompile(`("updated"\s*:\s*)"[^"]*"`)

// bumpUpdated sets every updated timestamp in body (top-level or nested) to
// a later time.
func bumpUpdated(body []byte) []byte {
	return updated.ReplaceAll(body, []byte(`${1}"2026-12-31T23:59:59.999Z"`))
}

func TestBumpUpdated(t *testing.T) {
	for _, name := range []string{"invoice_paid.json", "payment_capture.json", "virtual_account_paid.json"} {
		body := readFixture(t, name)
		require.NotEqual(t, body, bumpUpdated(body), name)
	}
}
