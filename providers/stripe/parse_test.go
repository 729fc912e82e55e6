package stripe_test

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

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/stripe"
)

// fixtures holds Stripe's sample events, the ones `webhookd replay` sends;
// docsExample is the event envelope of Stripe's documentation.
const (
	fixtures    = "../../fixtures/stripe"
	docsExample = "testdata/event_envelope_docs_example.json"
)

// readFixture reads path, or the fixture of that name.
func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	if filepath.Dir(path) == "." {
		path = filepath.Join(fixtures, path)
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file     string
		wantKey  string
		wantType string
	}{
		{docsExample, "evt_1NG8Du2eZvKYlo2CUI79vXWy", "setup_intent.created"},
		{"payment_intent_succeeded.json", "evt_3Qx7Wbhkd0PayInt0001", "payment_intent.succeeded"},
		{"charge_refunded.json", "evt_3Qx7Wbhkd0Refund0003", "charge.refunded"},
		{"checkout_session_completed.json", "evt_1Qx7Wbhkd0Checkout04", "checkout.session.completed"},
		{"invoice_paid.json", "evt_1Qx7Wbhkd0InvPaid005", "invoice.paid"},
		{"payment_intent_payment_failed.json", "evt_3Qx7Wbhkd0PayFail0002", "payment_intent.payment_failed"},
	}
	a := newAdapter(t, vecNow)
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: readFixture(t, tt.file)}))
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, ev.Key)
			require.Equal(t, tt.wantType, ev.Type)
			require.Regexp(t, `^[0-9a-f]{64}$`, ev.Fingerprint)
			require.NotContains(t, seen, ev.Fingerprint, "distinct events must have distinct fingerprints")
			seen[ev.Fingerprint] = tt.file
		})
	}
}

func TestParseVector(t *testing.T) {
	ev, err := providertest.OneEvent(newAdapter(t, vecNow).Parse(providers.Delivery{Body: []byte(vecBody)}))
	require.NoError(t, err)
	// The fingerprint encoding is pinned: changing it would give in-flight
	// retries a different fingerprint (422) across a deploy. For this body
	// the encoded tuple is the body itself: sha256 of
	// {"id":"evt_test_webhook","object":"event"}.
	require.Equal(t, providers.Event{
		Key:         "evt_test_webhook",
		Type:        "",
		Fingerprint: "9abdb463d32d99e43b6ab75d825da3861f8dd0a81bd85c4f58b9bca5b91b4df8",
	}, ev)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{"empty body", "", stripe.ErrNotJSON},
		{"not JSON", "id=evt_1&type=charge.succeeded", stripe.ErrNotJSON},
		{"truncated object", `{"id":"evt_1"`, stripe.ErrNotJSON},
		{"trailing garbage", `{"id":"evt_1"} {}`, stripe.ErrNotJSON},
		{"JSON array", `[{"id":"evt_1"}]`, stripe.ErrNotJSON},
		{"JSON string", `"evt_1"`, stripe.ErrNotJSON},
		{"JSON null", `null`, stripe.ErrNotJSON},
		{"JSON number", `42`, stripe.ErrNotJSON},
		{"missing id", `{"object":"event","type":"charge.succeeded"}`, stripe.ErrNoEventID},
		{"id not a string", `{"id":123,"type":"charge.succeeded"}`, stripe.ErrNoEventID},
		{"id an object", `{"id":{"id":"evt_1"}}`, stripe.ErrNoEventID},
		{"id null", `{"id":null}`, stripe.ErrNoEventID},
		{"id empty", `{"id":""}`, stripe.ErrNoEventID},
		{"id with a space", `{"id":"evt 1"}`, stripe.ErrNoEventID},
		{"id with a newline", `{"id":"evt_1\r\nX-Injected: 1"}`, stripe.ErrNoEventID},
		{"id with non-ASCII", `{"id":"evt_é"}`, stripe.ErrNoEventID},
		{"id too long", `{"id":"evt_` + strings.Repeat("a", stripe.MaxTokenBytes) + `"}`, stripe.ErrNoEventID},
		{"id key in another case", `{"ID":"evt_1"}`, stripe.ErrNoEventID},
		{"type not a string", `{"id":"evt_1","type":["charge.succeeded"]}`, stripe.ErrInvalidEventType},
		{"type with a newline", `{"id":"evt_1","type":"charge\nsucceeded"}`, stripe.ErrInvalidEventType},
		// A repeated member is refused, not resolved to its last value: the
		// core service could read the first one.
		{"id twice", `{"id":"evt_1","type":"charge.succeeded","id":"evt_2"}`, stripe.ErrNotJSON},
		{"id twice, once escaped", `{"id":"evt_1","\u0069d":"evt_2"}`, stripe.ErrNotJSON},
		{"type twice", `{"id":"evt_1","type":"charge.refunded","type":"charge.succeeded"}`, stripe.ErrNotJSON},
		{"data twice", `{"id":"evt_1","data":{"object":{"amount":1}},"data":{"object":{"amount":2}}}`, stripe.ErrNotJSON},
		{"unfingerprinted member twice", `{"id":"evt_1","pending_webhooks":1,"pending_webhooks":2}`, stripe.ErrNotJSON},
	}
	a := newAdapter(t, vecNow)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrMalformed)
			require.NotErrorIs(t, err, providers.ErrUnauthorized)
			require.Zero(t, ev)
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantKey  string
		wantType string
	}{
		{"type absent", `{"id":"evt_1"}`, "evt_1", ""},
		{"type null", `{"id":"evt_1","type":null}`, "evt_1", ""},
		{"id with a JSON escape", `{"id":"evt_\u0031","type":"charge.succeeded"}`, "evt_1", "charge.succeeded"},
		{"id of the maximum length", `{"id":"` + strings.Repeat("a", stripe.MaxTokenBytes) + `"}`, strings.Repeat("a", stripe.MaxTokenBytes), ""},
		{"thin v2 event", `{"id":"evt_test_65R9","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered"}`,
			"evt_test_65R9", "v1.billing.meter.error_report_triggered"},
		{"surrounding white space", " \n{\"id\":\"evt_1\"}\n", "evt_1", ""},
	}
	a := newAdapter(t, vecNow)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, ev.Key)
			require.Equal(t, tt.wantType, ev.Type)
		})
	}
}

// replaceOnce replaces old with new in b, requiring exactly one occurrence so
// that a fixture edit cannot silently stop exercising the case.
func replaceOnce(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	require.Equal(t, 1, bytes.Count(b, []byte(old)), "occurrences of %q", old)
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

func TestFingerprint(t *testing.T) {
	orig := readFixture(t, "payment_intent_succeeded.json")
	compact := func(b []byte) []byte {
		var buf bytes.Buffer
		require.NoError(t, json.Compact(&buf, b))
		return buf.Bytes()
	}
	indent := func(b []byte) []byte {
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, b, "", "\t"))
		return buf.Bytes()
	}

	tests := []struct {
		name     string
		edit     func(t *testing.T, b []byte) []byte
		wantSame bool
	}{
		// A legitimate retry of the same event.
		{"pending_webhooks changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"pending_webhooks": 2`, `"pending_webhooks": 3`)
		}, true},
		{"pending_webhooks removed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"pending_webhooks": 2,`, ``)
		}, true},
		{"request changed", func(t *testing.T, b []byte) []byte {
			b = replaceOnce(t, b, `"id": "req_Wbhkd0Req1201"`, `"id": "req_Other"`)
			return replaceOnce(t, b, `"idempotency_key": "8d4c2f6e-1a3b-4c5d-9e7f-0a1b2c3d1201"`, `"idempotency_key": null`)
		}, true},
		{"compacted", func(t *testing.T, b []byte) []byte { return compact(b) }, true},
		{"re-indented with tabs and a trailing newline", func(t *testing.T, b []byte) []byte {
			return append(indent(b), '\n')
		}, true},
		{"space inside data only", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"amount": 4900,`, `"amount"  :  4900 ,`)
		}, true},

		// A different event, or a different payload under the same id.
		{"data.object.amount changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"amount": 4900,`, `"amount": 4901,`)
		}, false},
		{"data.object.status changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"status": "succeeded"`, `"status": "canceled"`)
		}, false},
		{"data.previous_attributes added", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"data": {`, `"data": {"previous_attributes": {"status": "processing"},`)
		}, false},
		{"type changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"type": "payment_intent.succeeded"`, `"type": "payment_intent.canceled"`)
		}, false},
		{"created changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"created": 1741946412`, `"created": 1741946413`)
		}, false},
		{"livemode changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"livemode": false,
  "pending`, `"livemode": true,
  "pending`)
		}, false},
		{"api_version changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"api_version": "2025-06-30.basil"`, `"api_version": "2025-09-30.clover"`)
		}, false},
		{"account added", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"object": "event",`, `"object": "event", "account": "acct_1",`)
		}, false},
		{"account null instead of absent", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"object": "event",`, `"object": "event", "account": null,`)
		}, false},
	}
	a := newAdapter(t, vecNow)
	want, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: orig}))
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := tt.edit(t, bytes.Clone(orig))
			require.NotEqual(t, orig, edited)
			got, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: edited}))
			require.NoError(t, err)
			if tt.wantSame {
				require.Equal(t, want, got)
				return
			}
			require.NotEqual(t, want.Fingerprint, got.Fingerprint)
		})
	}
}

// TestFingerprintUnambiguous checks that moving bytes between fields cannot
// produce the same encoded tuple.
func TestFingerprintUnambiguous(t *testing.T) {
	bodies := []string{
		`{"id":"evt_1","type":"a.b"}`,
		`{"id":"evt_1","type":"a","api_version":"b"}`,
		`{"id":"evt_1","api_version":"a.b"}`,
		`{"id":"evt_1","type":"a.b","data":null}`,
		`{"id":"evt_1","type":"a.b","data":{}}`,
		`{"id":"evt_1","type":"a.b","data":""}`,
		`{"id":"evt_1","type":"a.b","created":1}`,
		`{"id":"evt_1","type":"a.b","created":"1"}`,
		`{"id":"evt_1","type":"a.b","account":"x"}`,
		`{"id":"evt_1","type":"a.b","livemode":false}`,
	}
	a := newAdapter(t, vecNow)
	seen := map[string]string{}
	for _, body := range bodies {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(body)}))
		require.NoError(t, err, body)
		require.NotContains(t, seen, ev.Fingerprint, "%s collides with %s", body, seen[ev.Fingerprint])
		seen[ev.Fingerprint] = body
	}
}

// legacyFingerprint is the fingerprint as Parse computed it when it decoded
// bodies with json.Unmarshal into a map, kept here to show that reading the
// body with rawjson changed no stored fingerprint.
func legacyFingerprint(t *testing.T, body []byte) string {
	t.Helper()
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &fields))
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, name := range []string{"id", "object", "type", "api_version", "account", "created", "livemode", "data"} {
		raw, ok := fields[name]
		if !ok {
			continue
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.WriteString(`"` + name + `":`)
		require.NoError(t, json.Compact(&buf, raw))
	}
	buf.WriteByte('}')
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

func TestFingerprintUnchangedByRawjson(t *testing.T) {
	paths, err := filepath.Glob("../../fixtures/stripe/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	bodies := [][]byte{
		[]byte(vecBody),
		[]byte("{\n  \"id\": \"evt_1\",\n  \"data\": { \"object\": {\"b\": 1, \"a\": \"\\u00e9\"} },\n  \"created\": 1.50e3, \"livemode\": false, \"extra\": [1]\n}"),
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		bodies = append(bodies, b)
	}
	a := newAdapter(t, vecNow)
	for _, body := range bodies {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		require.NoError(t, err)
		require.Equal(t, legacyFingerprint(t, body), ev.Fingerprint, "%s", body)
	}
}

// TestParseAllocations pins what a parse costs: the Object and its members,
// and the event's three strings. The fingerprint's encoding, as large as the
// body, is written in a reused buffer.
func TestParseAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	a := newAdapter(t, vecNow)
	body := readFixture(t, "charge_refunded.json")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body})); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, allocs, 5.0)
}
