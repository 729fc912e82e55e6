package xendit_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
)

// TestParseRefusesNameVariants: Go's encoding/json matches member names
// case-insensitively (with Unicode folding, last one wins), so a body that
// spells a member two ways, at any depth, says one thing to webhookd and
// another to such a core service. Parse refuses it, and a lone other
// spelling of a member Parse reads.
func TestParseRefusesNameVariants(t *testing.T) {
	tests := []struct{ name, body string }{
		{"flat: status twice, upper-case", `{"id":"inv-1","status":"EXPIRED","Status":"PAID"}`},
		{"flat: status twice, all caps", `{"id":"inv-1","status":"EXPIRED","STATUS":"PAID"}`},
		{"flat: status twice, long s (U+017F)", `{"id":"inv-1","status":"EXPIRED","ſtatuſ":"PAID"}`},
		{"flat: status twice, escaped long s", `{"id":"inv-1","status":"EXPIRED","\u017ftatus":"PAID"}`},
		{"flat: paid_amount twice", `{"id":"inv-1","status":"PAID","paid_amount":1000,"Paid_Amount":1000000}`},
		{"flat: status spelled only another way", `{"id":"inv-1","STATUS":"PAID"}`},
		{"envelope: event twice", `{"event":"payment.failed","Event":"payment.succeeded","data":{"id":"py-1"}}`},
		{"envelope: data.status twice", `{"event":"payment.succeeded","data":{"id":"py-1","status":"FAILED","ſtatus":"SUCCEEDED"}}`},
		{"envelope: data.amount twice", `{"event":"payment.succeeded","data":{"id":"py-1","amount":1,"AMOUNT":100000}}`},
		{"envelope: deeper, Kelvin sign (U+212A)", `{"event":"payment.succeeded","data":{"id":"py-1","payment_method":{"kind":"a","` + "\u212a" + `ind":"b"}}}`},
		{"envelope: data spelled only another way", `{"event":"payment.succeeded","Data":{"id":"py-1"},"id":"x","status":"PAID"}`},
		{"envelope: data.id spelled only another way", `{"event":"payment.succeeded","data":{"ID":"py-1","payment_id":"py-2"}}`},
	}
	a := newAdapter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var probe map[string]any
			require.NoError(t, json.Unmarshal([]byte(tt.body), &probe), "the body is valid JSON")
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
			require.ErrorIs(t, err, providers.ErrMalformed)
			require.NotErrorIs(t, err, providers.ErrUnauthorized)
			require.Zero(t, ev)
		})
	}
	// What a Go core reads from the first body: the appended status.
	var core struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(tests[0].body), &core))
	require.Equal(t, "PAID", core.Status)
}
