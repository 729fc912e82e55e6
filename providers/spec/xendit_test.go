package spec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// errKey stands for the refusals whose reason is no_event_key: a key part
// missing or unusable, or a type that is not a token.
var errKey = providers.ErrNoEventKey

// TestXenditKeys walks every rule of docs/contract.md's Xendit event key
// on builtin/xendit.yaml, in order: the envelope, the flat body with a
// status, and the others.
func TestXenditKeys(t *testing.T) {
	long := strings.Repeat("a", 120)
	longEvent := long[:len(long)-2] + ".b"
	tests := []struct {
		name     string
		body     string
		wantKey  string
		wantType string
		wantErr  error
	}{
		// Envelope: event and data.
		{name: "envelope: event and data.id", body: `{"event":"payment.succeeded","data":{"id":"ddpy-1","payment_id":"py-9"}}`,
			wantKey: "payment.succeeded:ddpy-1", wantType: "payment.succeeded"},
		{name: "envelope: data.id wins over capture_id", body: `{"event":"refund.succeeded","data":{"id":"rfd-1","payment_id":"py-1","capture_id":"cp-1"}}`,
			wantKey: "refund.succeeded:rfd-1", wantType: "refund.succeeded"},
		{name: "envelope: data.payment_id without data.id", body: `{"event":"payment.authorization","data":{"payment_id":"py-1"}}`,
			wantKey: "payment.authorization:py-1", wantType: "payment.authorization"},
		{name: "envelope: data.payment_id and data.capture_id", body: `{"event":"payment.capture","data":{"payment_id":"py-1","capture_id":"cp-1"}}`,
			wantKey: "payment.capture:py-1:cp-1", wantType: "payment.capture"},
		{name: "envelope: null data.id counts as absent", body: `{"event":"payment.capture","data":{"id":null,"payment_id":"py-1"}}`,
			wantKey: "payment.capture:py-1", wantType: "payment.capture"},
		{name: "envelope: empty data.id counts as absent", body: `{"event":"payment.capture","data":{"id":"","payment_id":"py-1","capture_id":""}}`,
			wantKey: "payment.capture:py-1", wantType: "payment.capture"},
		{name: "envelope: top-level id and status play no part", body: `{"id":"x","status":"PAID","event":"payment.succeeded","data":{"id":"ddpy-1"}}`,
			wantKey: "payment.succeeded:ddpy-1", wantType: "payment.succeeded"},
		{name: "envelope: same data.id under two events is two keys", body: `{"event":"payment.failed","data":{"id":"ddpy-1"}}`,
			wantKey: "payment.failed:ddpy-1", wantType: "payment.failed"},
		{name: "envelope: longest parts", body: `{"event":"` + longEvent + `","data":{"payment_id":"` + long + `","capture_id":"` + long + `"}}`,
			wantKey: longEvent + ":" + long + ":" + long, wantType: longEvent},
		{name: "envelope: data with neither id nor payment_id", body: `{"event":"payment.succeeded","data":{"status":"SUCCEEDED"}}`, wantErr: errKey},
		{name: "envelope: capture_id alone is not enough", body: `{"event":"payment.capture","data":{"capture_id":"cp-1"}}`, wantErr: errKey},
		{name: "envelope: data not an object", body: `{"event":"payment.succeeded","data":"ddpy-1"}`, wantErr: errKey},
		{name: "envelope: data an array", body: `{"event":"payment.succeeded","data":[{"id":"ddpy-1"}]}`, wantErr: errKey},
		{name: "envelope: duplicate data.id", body: `{"event":"payment.succeeded","data":{"id":"a","id":"b"}}`, wantErr: ErrNotJSON},
		// A number is read as its text, where the Go adapter answered 400
		// (docs/providers/xendit.md, "Body grammar").
		{name: "envelope: numeric data.id", body: `{"event":"payment.succeeded","data":{"id":42}}`, wantKey: "payment.succeeded:42", wantType: "payment.succeeded"},
		{name: "envelope: data.id with a colon", body: `{"event":"payment.succeeded","data":{"id":"a:b"}}`, wantErr: errKey},
		{name: "envelope: data.payment_id with a space", body: `{"event":"payment.capture","data":{"payment_id":"py 1"}}`, wantErr: errKey},
		{name: "envelope: capture_id with CRLF", body: `{"event":"payment.capture","data":{"payment_id":"py-1","capture_id":"c\r\nX: 1"}}`, wantErr: errKey},
		{name: "envelope: data.id of 121 bytes, within the 255 of a key part", body: `{"event":"payment.succeeded","data":{"id":"` + long + `a"}}`,
			wantKey: "payment.succeeded:" + long + "a", wantType: "payment.succeeded"},
		{name: "envelope: data.id of 256 bytes", body: `{"event":"payment.succeeded","data":{"id":"` + strings.Repeat("a", 256) + `"}}`, wantErr: errKey},
		{name: "envelope: event not a string", body: `{"event":7,"data":{"id":"ddpy-1"}}`, wantErr: errKey},
		{name: "envelope: event with a space", body: `{"event":"payment succeeded","data":{"id":"ddpy-1"}}`, wantErr: errKey},
		// Envelope events are dotted names; a flat body's id is not (see
		// TestParseShapesCannotCollide).
		{name: "envelope: event without a dot", body: `{"event":"inv-1","data":{"id":"PAID"}}`, wantErr: errKey},

		// Flat body with status.
		{name: "flat: id and status", body: `{"id":"inv-1","external_id":"o-1","status":"PAID","payment_id":"pay-1"}`,
			wantKey: "inv-1:PAID", wantType: "PAID"},
		{name: "flat: same invoice expired", body: `{"id":"inv-1","external_id":"o-1","status":"EXPIRED"}`,
			wantKey: "inv-1:EXPIRED", wantType: "EXPIRED"},
		{name: "flat: event without data keys by id and status, typed by event", body: `{"event":"ewallet.capture","id":"ewc-1","status":"SUCCEEDED"}`,
			wantKey: "ewc-1:SUCCEEDED", wantType: "ewallet.capture"},
		{name: "flat: event with null data", body: `{"event":"x.y","data":null,"id":"i-1","status":"DONE"}`,
			wantKey: "i-1:DONE", wantType: "x.y"},
		{name: "flat: status without id", body: `{"external_id":"o-1","status":"PAID","payment_id":"pay-1"}`, wantErr: errKey},
		{name: "flat: status a number", body: `{"id":"inv-1","status":1}`, wantKey: "inv-1:1", wantType: "1"},
		{name: "flat: status with a colon", body: `{"id":"inv-1","status":"PAID:x"}`, wantErr: errKey},
		{name: "flat: id with non-ASCII", body: `{"id":"inv-é","status":"PAID"}`, wantErr: errKey},
		{name: "flat: id shaped like an event name", body: `{"id":"payment.succeeded","status":"py-1"}`, wantErr: errKey},
		{name: "flat: id with a dot", body: `{"id":"inv.1","status":"PAID"}`, wantErr: errKey},

		// Otherwise: payment_id, else id.
		{name: "other: payment_id", body: `{"id":"va-pay-1","payment_id":"pay-1","callback_virtual_account_id":"va-1"}`,
			wantKey: "pay-1", wantType: ""},
		{name: "other: id without payment_id", body: `{"id":"va-pay-1","callback_virtual_account_id":"va-1"}`,
			wantKey: "va-pay-1", wantType: ""},
		{name: "other: null status counts as absent", body: `{"id":"va-pay-1","status":null,"payment_id":"pay-1"}`,
			wantKey: "pay-1", wantType: ""},
		{name: "other: empty payment_id counts as absent", body: `{"id":"va-pay-1","payment_id":""}`,
			wantKey: "va-pay-1", wantType: ""},
		{name: "other: data without event is just a field", body: `{"id":"i-1","data":{"id":"d-1"}}`,
			wantKey: "i-1", wantType: ""},
		{name: "other: nothing to key by", body: `{"external_id":"o-1","amount":5}`, wantErr: errKey},
		{name: "other: empty object", body: `{}`, wantErr: errKey},
		{name: "other: payment_id a number", body: `{"id":"i-1","payment_id":1487156512722}`, wantKey: "1487156512722"},

		// Not a JSON object.
		{name: "empty body", body: ``, wantErr: ErrNotJSON},
		{name: "form-encoded", body: `id=1&status=PAID`, wantErr: ErrNotJSON},
		{name: "array", body: `[{"id":"1"}]`, wantErr: ErrNotJSON},
		{name: "trailing data", body: `{"id":"1"}{"id":"2"}`, wantErr: ErrNotJSON},
		{name: "duplicate status (readers could disagree)", body: `{"id":"inv-1","status":"EXPIRED","status":"PAID"}`, wantErr: ErrNotJSON},
	}
	p, err := builtinSpec(t, "xendit").New([]string{"xnd_token"}, nil, nil)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := p.Parse(providers.Delivery{Body: []byte(tt.body)})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, providers.ErrMalformed)
				require.Empty(t, items)
				return
			}
			require.NoError(t, err)
			require.Len(t, items, 1)
			require.Equal(t, tt.wantKey, items[0].Key)
			require.Equal(t, tt.wantType, items[0].Type)
		})
	}
}

// TestXenditFingerprints: an envelope's fingerprint covers its event,
// business_id and the listed members of data, a flat body's its listed
// members; a later updated, another order or a field added since leave it
// as it was, a changed amount does not.
func TestXenditFingerprints(t *testing.T) {
	p, err := builtinSpec(t, "xendit").New([]string{"xnd_token"}, nil, nil)
	require.NoError(t, err)
	fp := func(body string) string {
		items, err := p.Parse(providers.Delivery{Body: []byte(body)})
		require.NoError(t, err, body)
		return items[0].Fingerprint
	}
	env := fp(`{"event":"payment.capture","business_id":"b1","created":"t1","data":{"payment_id":"py-1","capture_id":"cp-1","amount":5,"updated":"t1","description":"d"}}`)
	require.Equal(t, env, fp(`{"business_id":"b1","event":"payment.capture","created":"t2","data":{"capture_id":"cp-1","payment_id":"py-1","amount":5,"updated":"t2","added":1}}`))
	require.NotEqual(t, env, fp(`{"event":"payment.capture","business_id":"b1","data":{"payment_id":"py-1","capture_id":"cp-1","amount":6}}`))
	flat := fp(`{"id":"inv-1","status":"PAID","amount":5,"updated":"t1","metadata":{"a":1}}`)
	require.Equal(t, flat, fp(`{"status":"PAID","id":"inv-1","amount":5,"updated":"t2"}`))
	require.NotEqual(t, flat, fp(`{"id":"inv-1","status":"PAID","amount":6}`))
}
