package spec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/spec"
)

// TestBuiltinSignedParts holds what each built-in spec's signature covers to
// docs/contract.md ("Sources, destinations and routes"): a route's where is
// refused for Mercado Pago, Flutterwave, PhonePe, Xendit and the form gateways that
// sign a few fields, its types for Shopify's topic header, Mercado Pago's
// body and HitPay's headers.
func TestBuiltinSignedParts(t *testing.T) {
	want := map[string][2]bool{ // SignedBody, SignedType
		"shopify": {true, false}, "mercadopago": {false, false}, "flutterwave": {false, false},
		// A token signs nothing; a form signature signs a few fields, the
		// type among them; HitPay's type headers are not signed.
		"phonepe": {false, false}, "faspay": {false, true}, "payu": {false, true}, "hitpay": {true, false},
		"xendit": {false, false},
	}
	specs, err := spec.Builtin()
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	for _, s := range specs {
		e := s.Entry()
		w, listed := want[e.Name]
		if !listed {
			w = [2]bool{true, true}
		}
		require.Equal(t, w, [2]bool{e.SignedBody, e.SignedType}, e.Name)
	}
}
