package xendit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/xendit"
)

const fixtures = "../../fixtures/xendit"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file     string
		wantKey  string
		wantType string
	}{
		{"invoice_expired.json", "65f2a1c4e7b3d90012ab34cd:EXPIRED", "EXPIRED"},
		{"invoice_paid.json", "65f2a1c4e7b3d90012ab34cd:PAID", "PAID"},
		{"payment_succeeded.json", "payment.succeeded:ewc_7a3d91f0-5c2e-4b8a-a1d6-0e9f3c7b2a58", "payment.succeeded"},
		{"payment_capture.json", "payment.capture:py-c81f2d4e-6a93-4b07-9e1c-3d5a7f0b2e64:cptr-5e0a9d3b-7f21-4c8e-a6b4-1d2c3e4f5a06", "payment.capture"},
		{"refund_succeeded.json", "refund.succeeded:rfd-3a9c7e1b-4d2f-4a6e-8b0c-5f1d9e7a2c38", "refund.succeeded"},
		{"virtual_account_paid.json", "7c1e9a4b3f2d8e06a5b4c3d2", ""},
	}
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.Len(t, paths, len(tests), "every fixture has a row here")

	a := newAdapter(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: readFixture(t, tt.file)}))
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, ev.Key)
			require.Equal(t, tt.wantType, ev.Type)
			require.Regexp(t, `^[0-9a-f]{64}$`, ev.Fingerprint)
		})
	}
}

// TestParseKeys walks every rule of docs/contract.md's Xendit event key, in order.
func TestParseKeys(t *testing.T) {
	long := strings.Repeat("a", xendit.MaxFieldBytes)
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
		{name: "envelope: data with neither id nor payment_id", body: `{"event":"payment.succeeded","data":{"status":"SUCCEEDED"}}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: capture_id alone is not enough", body: `{"event":"payment.capture","data":{"capture_id":"cp-1"}}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: data not an object", body: `{"event":"payment.succeeded","data":"ddpy-1"}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: data an array", body: `{"event":"payment.succeeded","data":[{"id":"ddpy-1"}]}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: duplicate data.id", body: `{"event":"payment.succeeded","data":{"id":"a","id":"b"}}`, wantErr: xendit.ErrNotJSON},
		{name: "envelope: numeric data.id", body: `{"event":"payment.succeeded","data":{"id":42}}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: data.id with a colon", body: `{"event":"payment.succeeded","data":{"id":"a:b"}}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: data.payment_id with a space", body: `{"event":"payment.capture","data":{"payment_id":"py 1"}}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: capture_id with CRLF", body: `{"event":"payment.capture","data":{"payment_id":"py-1","capture_id":"c\r\nX: 1"}}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: data.id too long", body: `{"event":"payment.succeeded","data":{"id":"` + long + `a"}}`, wantErr: xendit.ErrNoEventKey},
		{name: "envelope: event not a string", body: `{"event":7,"data":{"id":"ddpy-1"}}`, wantErr: xendit.ErrInvalidEventType},
		{name: "envelope: event with a space", body: `{"event":"payment succeeded","data":{"id":"ddpy-1"}}`, wantErr: xendit.ErrInvalidEventType},
		// Envelope events are dotted names; a flat body's id is not (see
		// TestParseShapesCannotCollide).
		{name: "envelope: event without a dot", body: `{"event":"inv-1","data":{"id":"PAID"}}`, wantErr: xendit.ErrInvalidEventType},

		// Flat body with status.
		{name: "flat: id and status", body: `{"id":"inv-1","external_id":"o-1","status":"PAID","payment_id":"pay-1"}`,
			wantKey: "inv-1:PAID", wantType: "PAID"},
		{name: "flat: same invoice expired", body: `{"id":"inv-1","external_id":"o-1","status":"EXPIRED"}`,
			wantKey: "inv-1:EXPIRED", wantType: "EXPIRED"},
		{name: "flat: event without data keys by id and status, typed by event", body: `{"event":"ewallet.capture","id":"ewc-1","status":"SUCCEEDED"}`,
			wantKey: "ewc-1:SUCCEEDED", wantType: "ewallet.capture"},
		{name: "flat: event with null data", body: `{"event":"x.y","data":null,"id":"i-1","status":"DONE"}`,
			wantKey: "i-1:DONE", wantType: "x.y"},
		{name: "flat: status without id", body: `{"external_id":"o-1","status":"PAID","payment_id":"pay-1"}`, wantErr: xendit.ErrNoEventKey},
		{name: "flat: status not a string", body: `{"id":"inv-1","status":1}`, wantErr: xendit.ErrInvalidEventType},
		{name: "flat: status with a colon", body: `{"id":"inv-1","status":"PAID:x"}`, wantErr: xendit.ErrInvalidEventType},
		{name: "flat: id with non-ASCII", body: `{"id":"inv-é","status":"PAID"}`, wantErr: xendit.ErrNoEventKey},
		{name: "flat: id shaped like an event name", body: `{"id":"payment.succeeded","status":"py-1"}`, wantErr: xendit.ErrNoEventKey},
		{name: "flat: id with a dot", body: `{"id":"inv.1","status":"PAID"}`, wantErr: xendit.ErrNoEventKey},

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
		{name: "other: nothing to key by", body: `{"external_id":"o-1","amount":5}`, wantErr: xendit.ErrNoEventKey},
		{name: "other: empty object", body: `{}`, wantErr: xendit.ErrNoEventKey},
		{name: "other: payment_id a number", body: `{"id":"i-1","payment_id":1487156512722}`, wantErr: xendit.ErrNoEventKey},

		// Not a JSON object.
		{name: "empty body", body: ``, wantErr: xendit.ErrNotJSON},
		{name: "form-encoded", body: `id=1&status=PAID`, wantErr: xendit.ErrNotJSON},
		{name: "array", body: `[{"id":"1"}]`, wantErr: xendit.ErrNotJSON},
		{name: "trailing data", body: `{"id":"1"}{"id":"2"}`, wantErr: xendit.ErrNotJSON},
		{name: "duplicate status (readers could disagree)", body: `{"id":"inv-1","status":"EXPIRED","status":"PAID"}`, wantErr: xendit.ErrNotJSON},
	}
	a := newAdapter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, providers.ErrMalformed)
				require.NotErrorIs(t, err, providers.ErrUnauthorized)
				require.Zero(t, ev)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, ev.Key)
			require.Equal(t, tt.wantType, ev.Type)
			require.LessOrEqual(t, len("xendit:"+ev.Key), dedupe.MaxKeyLen, "the store must take the key")
		})
	}
}

// TestParseShapesCannotCollide: an envelope is keyed event:data.id and a
// flat body id:status, both two parts. Envelope events are dotted names
// (payment.succeeded) and Xendit's ids never hold a dot, so Parse refuses an
// envelope whose event has no dot and a flat body whose id has one: no flat
// key can then equal an envelope key. Without that, a flat
// {"id":"payment.succeeded","status":"py-1"} took the key of the envelope
// {"event":"payment.succeeded","data":{"id":"py-1"}}, and whichever came
// second got 422.
func TestParseShapesCannotCollide(t *testing.T) {
	a := newAdapter(t)
	envelope := `{"event":"payment.succeeded","data":{"id":"py-1","status":"SUCCEEDED"}}`
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(envelope)}))
	require.NoError(t, err)
	require.Equal(t, "payment.succeeded:py-1", ev.Key)
	for _, flat := range []string{
		`{"id":"payment.succeeded","status":"py-1"}`,
		`{"id":"payment.succeeded","status":"py-1","event":"x"}`,
		`{"id":"payment.succeeded","status":"py-1","event":"x.y","data":null}`,
	} {
		other, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(flat)}))
		if err == nil {
			require.NotEqual(t, ev.Key, other.Key, "%s and %s share a key", envelope, flat)
			continue
		}
		require.ErrorIs(t, err, providers.ErrMalformed)
	}

	flat := `{"id":"inv-1","status":"PAID"}`
	ev, err = providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(flat)}))
	require.NoError(t, err)
	require.Equal(t, "inv-1:PAID", ev.Key)
	other, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(`{"event":"inv-1","data":{"id":"PAID"}}`)}))
	if err == nil {
		require.NotEqual(t, ev.Key, other.Key)
	}

	// Every fixture keeps its key: Xendit's own events and ids pass.
	for _, name := range []string{"invoice_paid.json", "invoice_expired.json", "payment_succeeded.json", "payment_capture.json", "refund_succeeded.json"} {
		_, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: readFixture(t, name)}))
		require.NoError(t, err, name)
	}
}

func TestFingerprint(t *testing.T) {
	orig := readFixture(t, "payment_capture.json")
	reencode := func(t *testing.T, b []byte) []byte {
		var v map[string]any
		require.NoError(t, json.Unmarshal(b, &v))
		out, err := json.Marshal(v) // sorted keys, compact
		require.NoError(t, err)
		return out
	}
	tests := []struct {
		name     string
		edit     func(t *testing.T, b []byte) []byte
		wantSame bool
	}{
		// The same callback, serialised again.
		{"compacted", func(t *testing.T, b []byte) []byte {
			var buf bytes.Buffer
			require.NoError(t, json.Compact(&buf, b))
			return buf.Bytes()
		}, true},
		{"members reordered", reencode, true},
		{"escaped differently", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"currency": "IDR"`, `"currency": "\u0049DR"`)
		}, true},
		// The same callback, resent with fields Xendit may change or add.
		{"updated changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"updated": "2026-03-14T11:45:33.402Z"`, `"updated": "2026-03-14T11:50:00.000Z"`)
		}, true},
		{"envelope created changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"created": "2026-03-14T11:45:33.517Z"`, `"created": "2026-03-14T11:45:34.517Z"`)
		}, true},
		{"unknown field added to data", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"currency": "IDR"`, `"currency": "IDR", "channel_properties": {"a": 1}`)
		}, true},
		{"unknown field added to the envelope", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"event": "payment.capture",`, `"event": "payment.capture", "api_version": "v3",`)
		}, true},

		// A different payload under the same key.
		{"amount changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"captured_amount": 420000`, `"captured_amount": 42000`)
		}, false},
		{"amount written differently", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"captured_amount": 420000`, `"captured_amount": 420000.0`)
		}, false},
		{"request amount changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"request_amount": 420000`, `"request_amount": 420001`)
		}, false},
		{"status changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"status": "SUCCEEDED"`, `"status": "FAILED"`)
		}, false},
		{"currency changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"currency": "IDR"`, `"currency": "USD"`)
		}, false},
		{"failure_code added", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"currency": "IDR"`, `"currency": "IDR", "failure_code": "X"`)
		}, false},
		{"payment request changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"payment_request_id": "pr-c81f2d4e`, `"payment_request_id": "pr-d81f2d4e`)
		}, false},
		{"business changed", func(t *testing.T, b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`64c8e2f1a9b7d60011ce22aa`), []byte(`64c8e2f1a9b7d60011ce22ab`))
		}, false},
	}
	a := newAdapter(t)
	want, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: orig}))
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := tt.edit(t, bytes.Clone(orig))
			require.NotEqual(t, orig, edited)
			got, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: edited}))
			require.NoError(t, err)
			require.Equal(t, want.Key, got.Key)
			if tt.wantSame {
				require.Equal(t, want, got)
				return
			}
			require.NotEqual(t, want.Fingerprint, got.Fingerprint)
		})
	}
}

// TestFingerprintFixtures checks every fixture, envelope or flat: a resend
// with updated or created changed and unknown fields added keeps the
// fingerprint; a changed amount, status or currency changes it.
func TestFingerprintFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	a := newAdapter(t)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			body, err := os.ReadFile(path)
			require.NoError(t, err)
			want, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
			require.NoError(t, err)

			// edit decodes body, applies f to the object that holds the
			// event's fields (data for an envelope) and to the top level,
			// and encodes the result again.
			edit := func(f func(top, fields map[string]any)) providers.Event {
				t.Helper()
				dec := json.NewDecoder(bytes.NewReader(body))
				dec.UseNumber()
				var top map[string]any
				require.NoError(t, dec.Decode(&top))
				fields := top
				if d, ok := top["data"].(map[string]any); ok && top["event"] != nil {
					fields = d
				}
				f(top, fields)
				out, err := json.Marshal(top)
				require.NoError(t, err)
				ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: out}))
				require.NoError(t, err)
				require.Equal(t, want.Key, ev.Key)
				return ev
			}

			resent := edit(func(top, fields map[string]any) {
				for _, m := range []map[string]any{top, fields} {
					m["x_added_later"] = map[string]any{"v": 1}
					for _, ts := range []string{"updated", "created"} {
						if _, ok := m[ts]; ok {
							m[ts] = "2026-04-01T00:00:00.000Z"
						}
					}
				}
			})
			require.Equal(t, want, resent, "a resend with new timestamps and fields")

			n := 0
			for _, amount := range []string{"amount", "paid_amount", "request_amount", "captured_amount"} {
				got := edit(func(_, fields map[string]any) {
					if v, ok := fields[amount].(json.Number); ok {
						fields[amount] = json.Number(string(v) + "1")
						n++
					}
				})
				if _, ok := fieldsOf(t, body)[amount]; ok {
					require.NotEqual(t, want.Fingerprint, got.Fingerprint, "%s changed", amount)
				}
			}
			require.NotZero(t, n, "the fixture has an amount")
			for name, v := range map[string]string{"currency": "USD", "status": "VOIDED"} {
				if _, ok := fieldsOf(t, body)[name]; !ok {
					continue
				}
				if name == "status" && fieldsOf(t, body)["event"] == nil {
					continue // a flat body's status is part of its key
				}
				got := edit(func(_, fields map[string]any) { fields[name] = v })
				require.NotEqual(t, want.Fingerprint, got.Fingerprint, "%s changed", name)
			}
		})
	}
}

// fieldsOf returns the object holding a fixture's event fields: data for an
// envelope (with the envelope's event copied in), else the body itself.
func fieldsOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var top map[string]any
	require.NoError(t, json.Unmarshal(body, &top))
	if d, ok := top["data"].(map[string]any); ok && top["event"] != nil {
		d["event"] = top["event"]
		return d
	}
	return top
}

func replaceOnce(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	require.Equal(t, 1, bytes.Count(b, []byte(old)), "occurrences of %q", old)
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

// TestFingerprintPinned pins the fingerprint encoding: changing it would give
// retries in flight across a deploy a different fingerprint (422).
func TestFingerprintPinned(t *testing.T) {
	tests := []struct{ body, encoded string }{
		{`{"created":"c","data":{"updated":"u","amount":5,"id":"rfd-1","metadata":{"a":1}},"business_id":"b","event":"refund.succeeded"}`,
			`{"event":"refund.succeeded","business_id":"b","data":{"id":"rfd-1","amount":5}}`},
		{`{"updated":"u","amount":1.50,"status":"PAID","description":"d","id":"i"}`,
			`{"id":"i","status":"PAID","amount":1.50}`},
	}
	a := newAdapter(t)
	for _, tt := range tests {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(tt.encoded))
		require.Equal(t, hex.EncodeToString(sum[:]), ev.Fingerprint, tt.body)
	}
}

// TestShiftedKeys: event:data.id, event:payment_id:capture_id and
// id:status with a ":" moved from one part to the next never give two
// events one key (no part may hold ":").
func TestShiftedKeys(t *testing.T) {
	a := newAdapter(t)
	for _, tt := range []struct{ name, a, b string }{
		{"data.id against payment_id and capture_id",
			`{"event":"payment.capture","data":{"id":"py-1:cap-1"}}`,
			`{"event":"payment.capture","data":{"payment_id":"py-1","capture_id":"cap-1"}}`},
		{"payment_id into capture_id",
			`{"event":"payment.capture","data":{"payment_id":"py-1:cap","capture_id":"1"}}`,
			`{"event":"payment.capture","data":{"payment_id":"py-1","capture_id":"cap:1"}}`},
		{"event into data.id", `{"event":"payment.succeeded:py","data":{"id":"1"}}`, `{"event":"payment.succeeded","data":{"id":"py:1"}}`},
		{"flat id into status", `{"id":"inv-1:PAID","status":"x"}`, `{"id":"inv-1","status":"PAID:x"}`},
	} {
		t.Run(tt.name, func(t *testing.T) { providertest.ShiftedApart(t, a, []byte(tt.a), []byte(tt.b)) })
	}
}
