package midtrans_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/providertest"
)

// appendMembers inserts members (raw `,"name":value` text) before the
// closing brace of a fixture, leaving every signed byte alone.
func appendMembers(t *testing.T, b []byte, members string) []byte {
	t.Helper()
	return replaceOnce(t, clone(b), "\n}", members+"\n}")
}

// TestNameVariantsRefused: Midtrans's signature covers neither the status
// nor the refund fields, and Go's encoding/json (and other decoders) match
// member names case-insensitively, last one wins. A genuine notification
// with a second spelling of transaction_status appended would be keyed and
// status-checked here as the genuine status and read by such a core as the
// appended one; a lone second spelling would be read here as absent. Both
// are refused by Verify, Parse and Confirm.
func TestNameVariantsRefused(t *testing.T) {
	deny := replaceOnce(t, readFixture(t, "credit_card_capture_challenge.json"), `"fraud_status": "challenge"`, `"fraud_status": "deny"`)
	refund := readFixture(t, "gopay_partial_refund_1.json")
	tests := []struct {
		name string
		body []byte
		// coreReads is a field a Go core decodes from body with
		// encoding/json, and want what it reads: proof that the body
		// really says something else to such a core.
		coreReads, want string
		// lone: the body spells a field only another way, which Verify
		// (reading only the signed fields) need not notice.
		lone bool
	}{
		{name: "Transaction_Status appended", body: appendMembers(t, deny, `,"Transaction_Status":"settlement","Fraud_Status":"accept"`),
			coreReads: "transaction_status", want: "settlement"},
		{name: "TRANSACTION_STATUS appended", body: appendMembers(t, deny, `,"TRANSACTION_STATUS":"settlement","FRAUD_STATUS":"accept"`),
			coreReads: "transaction_status", want: "settlement"},
		{name: "long s (U+017F) appended", body: appendMembers(t, deny, `,"tranſaction_ſtatus":"settlement","fraud_ſtatus":"accept"`),
			coreReads: "transaction_status", want: "settlement"},
		{name: "escaped long s appended", body: appendMembers(t, deny, `,"tran\u017faction_status":"settlement"`),
			coreReads: "transaction_status", want: "settlement"},
		{name: "escaped upper-case appended", body: appendMembers(t, deny, `,"\u0054ransaction_status":"settlement"`),
			coreReads: "transaction_status", want: "settlement"},
		{name: "fraud status only, upper-case", body: appendMembers(t, deny, `,"Fraud_Status":"accept"`),
			coreReads: "fraud_status", want: "accept"},
		{name: "refund_amount inflated", body: appendMembers(t, refund, `,"Refund_Amount":"250000.00"`),
			coreReads: "refund_amount", want: "250000.00"},
		{name: "refund_amount inflated, upper-case", body: appendMembers(t, refund, `,"REFUND_AMOUNT":"250000.00"`),
			coreReads: "refund_amount", want: "250000.00"},
		{name: "refund_key with a Kelvin sign (U+212A)", body: appendMembers(t, refund, `,"refund_`+"\u212a"+`ey":"WH-REFUND-2044-02"`),
			coreReads: "refund_key", want: "WH-REFUND-2044-02"},
		// A lone other spelling: this adapter would read the field as
		// absent (no amount to compare), a Go core as the forged amount.
		{name: "refund_amount renamed", body: replaceOnce(t, clone(refund), `"refund_amount": "60000.00"`, `"Refund_Amount": "250000.00"`),
			coreReads: "refund_amount", want: "250000.00", lone: true},
		{name: "fraud_status renamed", body: replaceOnce(t, clone(deny), `"fraud_status": "deny"`, `"FRAUD_STATUS": "deny"`),
			coreReads: "fraud_status", want: "deny", lone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var core map[string]string
			switch tt.coreReads {
			case "transaction_status":
				var v struct {
					S string `json:"transaction_status"`
				}
				require.NoError(t, json.Unmarshal(tt.body, &v))
				core = map[string]string{tt.coreReads: v.S}
			case "fraud_status":
				var v struct {
					S string `json:"fraud_status"`
				}
				require.NoError(t, json.Unmarshal(tt.body, &v))
				core = map[string]string{tt.coreReads: v.S}
			case "refund_amount":
				var v struct {
					S string `json:"refund_amount"`
				}
				require.NoError(t, json.Unmarshal(tt.body, &v))
				core = map[string]string{tt.coreReads: v.S}
			case "refund_key":
				var v struct {
					S string `json:"refund_key"`
				}
				require.NoError(t, json.Unmarshal(tt.body, &v))
				core = map[string]string{tt.coreReads: v.S}
			}
			require.Equal(t, tt.want, core[tt.coreReads], "the body must say something else to a Go core")

			a := newAdapter(t, testKey, midtrans.WithStatusCheck("http://127.0.0.1:1"))
			if err := a.Verify(context.Background(), providers.Delivery{Body: tt.body}); !tt.lone {
				require.ErrorIs(t, err, providers.ErrUnauthorized)
			}
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: tt.body}))
			require.ErrorIs(t, err, providers.ErrMalformed)
			require.Zero(t, ev)
			// Confirm refuses before asking the status API (which is not
			// listening here: asking it would answer ErrStatusUnavailable).
			err = a.Confirm(context.Background(), providers.Item{Event: providers.Event{Key: "k"}, Body: tt.body})
			require.ErrorIs(t, err, providers.ErrMismatch)
		})
	}
}
