package replay

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

func TestFreshID(t *testing.T) {
	for _, tc := range []struct {
		name, provider, body, want string
		err                        error
	}{
		{name: "top-level id", provider: "stripe",
			body: `{"id":"evt_1","type":"charge.succeeded","amount":10.50}`,
			want: `{"amount":10.50,"id":"evt_1_r2","type":"charge.succeeded"}`},
		{name: "each element of an array", provider: "adyen",
			body: `{"notificationItems":[{"NotificationRequestItem":{"pspReference":"A"}},{"NotificationRequestItem":{"pspReference":"B"}}]}`,
			want: `{"notificationItems":[{"NotificationRequestItem":{"pspReference":"Ar2"}},{"NotificationRequestItem":{"pspReference":"Br2"}}]}`},
		{name: "any member", provider: "razorpay",
			body: `{"payload":{"payment":{"entity":{"id":"pay_1"}},"order":{"entity":{"id":"order_1"}}}}`,
			want: `{"payload":{"order":{"entity":{"id":"order_1_r2"}},"payment":{"entity":{"id":"pay_1_r2"}}}}`},
		{name: "form keeps its order", provider: "duitku",
			body: "merchantCode=D1&merchantOrderId=INV%2F1&resultCode=00\n",
			want: "merchantCode=D1&merchantOrderId=INV%2F1_r2&resultCode=00"},
		{name: "html characters stay", provider: "stripe",
			body: `{"id":"evt_<1>&"}`, want: `{"id":"evt_<1>&_r2"}`},
		{name: "unknown provider, usual place", provider: "newpay",
			body: `{"event_id":"e1"}`, want: `{"event_id":"e1_r2"}`},
		{name: "no id where it should be", provider: "stripe", body: `{"object":"event"}`, err: ErrNoEventID},
		{name: "numeric id takes the digits", provider: "shopify", body: `{"id":7}`, want: `{"id":72}`},
		{name: "each event of a batch", provider: "gocardless",
			body: `{"events":[{"id":"EV1"},{"id":"EV2"}]}`, want: `{"events":[{"id":"EV1_r2"},{"id":"EV2_r2"}]}`},
		{name: "id not a string or number", provider: "stripe", body: `{"id":true}`, err: ErrNoEventID},
		{name: "form without the field", provider: "duitku", body: "merchantCode=D1", err: ErrNoEventID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FreshID(Fixture{Path: "x.json", Provider: tc.provider, Body: []byte(tc.body)}, "_r2")
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// TestRunWithIDSuffixLeavesFixturesAlone: the caller's fixtures keep their
// bodies; only what is sent carries the suffix.
func TestRunWithIDSuffixLeavesFixturesAlone(t *testing.T) {
	fx := fixtures(1)
	body := string(fx[0].Body)
	got, err := withFreshIDs(fx, Options{IDSuffix: "_r2", Signers: signers(t)})
	require.NoError(t, err)
	require.Equal(t, body, string(fx[0].Body))
	require.Contains(t, string(got[0].Body), `"evt_0_r2"`)
}

// TestFreshIDAdyenNeedsALetterOrDigit: Adyen's pspReference takes letters
// and digits only, so a suffix without any cannot make a fresh id.
func TestFreshIDAdyenNeedsALetterOrDigit(t *testing.T) {
	f := Fixture{Path: "x.json", Provider: "adyen", Body: []byte(`{"notificationItems":[{"NotificationRequestItem":{"pspReference":"A"}}]}`)}
	_, err := FreshID(f, "_-")
	require.ErrorIs(t, err, ErrNoEventID)
}

// namedIDSigner is a signer whose spec names the member its key is made of.
type namedIDSigner struct {
	providers.Signer
	fields []string
}

func (n namedIDSigner) EventIDFields() []string { return n.fields }

// TestFreshIDNamedField: a signer that names its event id's member
// (replay.id_field of a spec keyed by a digest or several members) has
// that member rewritten, where the usual places hold nothing.
func TestFreshIDNamedField(t *testing.T) {
	body := `{"type":"PAYMENT_SUCCESS_WEBHOOK","data":{"payment":{"cf_payment_id":"5114910546213"}}}`
	fx := []Fixture{{Path: "x.json", Provider: "cashfree", Body: []byte(body)}}
	_, err := withFreshIDs(fx, Options{IDSuffix: "_r2", Signers: map[string]providers.Signer{"cashfree": namedIDSigner{}}})
	require.ErrorIs(t, err, ErrNoEventID, "no field named: the usual places")
	got, err := withFreshIDs(fx, Options{IDSuffix: "_r2", Signers: map[string]providers.Signer{"cashfree": namedIDSigner{fields: []string{"data.payment.cf_payment_id", "data.refund.cf_refund_id"}}}})
	require.NoError(t, err)
	require.Equal(t, `{"data":{"payment":{"cf_payment_id":"5114910546213_r2"}},"type":"PAYMENT_SUCCESS_WEBHOOK"}`, string(got[0].Body))
}
