package midtrans_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/providertest"
)

// refundAnswer is a GET status answer for the GoPay refund fixtures'
// transaction after its two partial refunds; refunds is the raw JSON of the
// refunds member, or "" for an answer without one.
func refundAnswer(status, refunds string) string {
	r := ""
	if refunds != "" {
		r = `,"refund_amount":"85000.00","refunds":` + refunds
	}
	return `{"status_code":"200","status_message":"Success, transaction is found",` +
		`"transaction_id":"9d3f6a21-8c4e-4a7b-b2d0-61e5f7a8c3d2","order_id":"WH-ORDER-2044","gross_amount":"310000.00",` +
		`"currency":"IDR","payment_type":"gopay","transaction_time":"2026-03-10 18:40:11",` +
		`"transaction_status":"` + status + `","fraud_status":"accept"` + r + `}`
}

// bothRefunds is the refunds array Midtrans reports after the two fixtures'
// partial refunds.
const bothRefunds = `[{"refund_chargeback_id":1,"refund_amount":"60000.00","created_at":"2026-03-10 19:02:31","reason":"size","refund_key":"WH-REFUND-2044-01"},` +
	`{"refund_chargeback_id":2,"refund_amount":"25000.00","created_at":"2026-03-11 08:15:02","reason":"late","refund_key":"WH-REFUND-2044-02"}]`

func TestConfirmRefund(t *testing.T) {
	first := readFixture(t, "gopay_partial_refund_1.json")
	edit := func(pairs ...string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			b := clone(first)
			for i := 0; i < len(pairs); i += 2 {
				b = replaceOnce(t, b, pairs[i], pairs[i+1])
			}
			return b
		}
	}
	tests := []struct {
		name    string
		body    func(t *testing.T) []byte // default: the first partial refund
		answer  string
		wantErr error
	}{
		{name: "first refund listed", answer: refundAnswer("partial_refund", bothRefunds)},
		{name: "second refund listed", body: fixed(readFixture(t, "gopay_partial_refund_2.json")), answer: refundAnswer("partial_refund", bothRefunds)},
		{name: "forged refund_key", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", bothRefunds),
			body: edit(`"WH-REFUND-2044-01"`, `"WH-REFUND-2044-99"`)},
		{name: "forged refund_key and amount", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", bothRefunds),
			body: edit(`"WH-REFUND-2044-01"`, `"WH-REFUND-2044-99"`, `"60000.00"`, `"250000.00"`)},
		{name: "forged amount under a listed refund_key", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", bothRefunds),
			body: edit(`"60000.00"`, `"250000.00"`)},
		{name: "another refund's amount", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", bothRefunds),
			body: edit(`"60000.00"`, `"25000.00"`)},
		{name: "amount as a number with other zeros", body: edit(`"60000.00"`, `60000.0`), answer: refundAnswer("partial_refund", bothRefunds)},
		{name: "answer amount as a number", answer: refundAnswer("partial_refund", `[{"refund_amount":60000,"refund_key":"WH-REFUND-2044-01"}]`)},
		// Equal as float64, different as decimals.
		{name: "amounts a float cannot tell apart", wantErr: midtrans.ErrRefundMismatch,
			body:   edit(`"60000.00"`, `"9007199254740993"`),
			answer: refundAnswer("partial_refund", `[{"refund_amount":"9007199254740992","refund_key":"WH-REFUND-2044-01"}]`)},
		{name: "notification amount not a decimal", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", bothRefunds),
			body: edit(`"60000.00"`, `"6e4"`)},
		{name: "notification without refund_amount", body: edit(`"refund_amount": "60000.00",`, ``), answer: refundAnswer("partial_refund", bothRefunds)},
		{name: "answer entry without refund_amount", answer: refundAnswer("partial_refund", `[{"refund_key":"WH-REFUND-2044-01"}]`)},
		{name: "answer lists no refund yet", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", `[]`)},
		{name: "answer entry without refund_key", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", `[{"refund_amount":"60000.00"}]`)},
		{name: "refund_key compared as sent, not as its key digest",
			body:   edit(`"WH-REFUND-2044-01"`, `"retour n\u00b0 1"`),
			answer: refundAnswer("partial_refund", `[{"refund_amount":"60000.00","refund_key":"retour n° 1"}]`)},
		{name: "chargeback", body: edit(`"transaction_status": "partial_refund"`, `"transaction_status": "chargeback"`),
			answer: refundAnswer("chargeback", bothRefunds)},
		{name: "forged chargeback refund_key", wantErr: midtrans.ErrRefundMismatch,
			body:   edit(`"transaction_status": "partial_refund"`, `"transaction_status": "partial_chargeback"`, `"WH-REFUND-2044-01"`, `"WH-REFUND-2044-99"`),
			answer: refundAnswer("partial_chargeback", bothRefunds)},
		// The status must still match first.
		{name: "refund listed but status differs", wantErr: midtrans.ErrStatusMismatch, answer: refundAnswer("refund", bothRefunds)},
		// A notification with a refund_key is confirmed only by finding it:
		// an answer that lists no refunds cannot (docs/providers.md,
		// "Midtrans": the status API lists every refund of a transaction).
		{name: "no refunds array", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", "")},
		{name: "refunds null", wantErr: midtrans.ErrRefundMismatch, answer: refundAnswer("partial_refund", "null")},
		{name: "refund_key on another status, answer without refunds", wantErr: midtrans.ErrRefundMismatch,
			body:   edit(`"transaction_status": "partial_refund"`, `"transaction_status": "settlement"`),
			answer: refundAnswer("settlement", "")},
		{name: "refund_key on another status, not listed", wantErr: midtrans.ErrRefundMismatch,
			body:   edit(`"transaction_status": "partial_refund"`, `"transaction_status": "settlement"`, `"WH-REFUND-2044-01"`, `"WH-REFUND-2044-99"`),
			answer: refundAnswer("settlement", bothRefunds)},
		// A refund or partial_refund notification without a refund_key
		// cannot be matched to one refund, and its key would not tell it
		// from the keyed notification it was cut from.
		{name: "partial_refund without refund_key", wantErr: midtrans.ErrRefundKeyMissing,
			body: edit(`"refund_key": "WH-REFUND-2044-01",`, ``), answer: refundAnswer("partial_refund", bothRefunds)},
		{name: "partial_refund with an empty refund_key", wantErr: midtrans.ErrRefundKeyMissing,
			body: edit(`"WH-REFUND-2044-01"`, `""`), answer: refundAnswer("partial_refund", bothRefunds)},
		{name: "partial_refund with a null refund_key", wantErr: midtrans.ErrRefundKeyMissing,
			body: edit(`"WH-REFUND-2044-01"`, `null`), answer: refundAnswer("partial_refund", bothRefunds)},
		{name: "refund without refund_key", wantErr: midtrans.ErrRefundKeyMissing,
			body:   edit(`"transaction_status": "partial_refund"`, `"transaction_status": "refund"`, `"refund_key": "WH-REFUND-2044-01",`, ``),
			answer: refundAnswer("refund", bothRefunds)},
		// Chargebacks come from the bank, not from a refund request with a
		// refund_key: without one, the status match is what there is.
		{name: "chargeback without refund_key: status match only",
			body:   edit(`"transaction_status": "partial_refund"`, `"transaction_status": "chargeback"`, `"refund_key": "WH-REFUND-2044-01",`, ``),
			answer: refundAnswer("chargeback", "")},
		{name: "refunds not an array", wantErr: midtrans.ErrStatusUnavailable, answer: refundAnswer("partial_refund", `{"refund_key":"WH-REFUND-2044-01"}`)},
		{name: "refunds entry not an object", wantErr: midtrans.ErrStatusUnavailable, answer: refundAnswer("partial_refund", `["WH-REFUND-2044-01"]`)},
		{name: "refunds entry with a numeric refund_key", wantErr: midtrans.ErrStatusUnavailable, answer: refundAnswer("partial_refund", `[{"refund_key":1}]`)},
		{name: "refunds entry with a duplicate refund_key", wantErr: midtrans.ErrStatusUnavailable,
			answer: refundAnswer("partial_refund", `[{"refund_key":"x","refund_key":"WH-REFUND-2044-01"}]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newStatusAPI(t, reply(200, tt.answer))
			a := newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL))
			body := first
			if tt.body != nil {
				body = tt.body(t)
			}
			// None of the edits touches what the signature covers.
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}))
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
			require.NoError(t, err)
			err = a.Confirm(context.Background(), providers.Item{Event: ev, Body: body})
			require.Equal(t, 1, api.requests())
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			if errors.Is(tt.wantErr, midtrans.ErrRefundMismatch) {
				require.ErrorIs(t, err, providers.ErrMismatch)
			}
		})
	}
}

// TestConfirmEditedRefundKey is the double refund the status check exists to
// stop: a genuine refund notification, replayed by someone who holds it with
// only its refund_key edited, still verifies (Midtrans signs order_id,
// status_code and gross_amount) and gets a new event key, so Confirm is all
// that keeps it from being forwarded as a second refund. It must be refused
// whatever the answer says about refunds, as long as it does not list the
// edited key.
func TestConfirmEditedRefundKey(t *testing.T) {
	genuine := readFixture(t, "gopay_partial_refund_1.json")
	edited := replaceOnce(t, clone(genuine), `"WH-REFUND-2044-01"`, `"WH-REFUND-2044-01-again"`)

	a := newAdapter(t, testKey)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: edited}))
	want, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: genuine}))
	require.NoError(t, err)
	got, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: edited}))
	require.NoError(t, err)
	require.NotEqual(t, want.Key, got.Key, "the edited notification is a new event to the store")

	answers := map[string]string{
		"no refunds array":     refundAnswer("partial_refund", ""),
		"refunds null":         refundAnswer("partial_refund", "null"),
		"refunds empty":        refundAnswer("partial_refund", "[]"),
		"only genuine refunds": refundAnswer("partial_refund", bothRefunds),
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			api := newStatusAPI(t, reply(200, answer))
			a := newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL))
			err := a.Confirm(context.Background(), providers.Item{Event: got, Body: edited})
			require.ErrorIs(t, err, midtrans.ErrRefundMismatch)
			require.ErrorIs(t, err, providers.ErrMismatch, "401: Midtrans did not send it")
		})
	}
	// The genuine notification is still confirmed once Midtrans lists it.
	api := newStatusAPI(t, reply(200, refundAnswer("partial_refund", bothRefunds)))
	a = newAdapter(t, testKey, midtrans.WithStatusCheck(api.URL))
	require.NoError(t, a.Confirm(context.Background(), providers.Item{Event: want, Body: genuine}))
}
