package spec_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/spec"
)

// builtinProvider is the built-in spec name, with secret, at a fixed clock.
func builtinProvider(t testing.TB, name, secret string) *spec.Provider {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	p, err := spec.NewBuiltin(name, []string{secret}, nil, func() time.Time { return now })
	require.NoError(t, err)
	return p
}

// readFixture reads fixtures/<provider>/<name>.
func readFixture(t testing.TB, provider, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", provider, name))
	require.NoError(t, err)
	return b
}

// replaceOnce replaces old with new in b, requiring exactly one occurrence
// so that a fixture edit cannot silently stop exercising the case.
func replaceOnce(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	require.Equal(t, 1, bytes.Count(b, []byte(old)), "occurrences of %q", old)
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

// TestReplacedParse: the bodies the Stripe and Paddle adapters refused or
// keyed, parsed by the specs that replaced them. A member named twice (in
// any spelling a case-insensitive decoder takes for one, at any depth) is
// malformed: Go's encoding/json would read the last, so webhookd and a Go
// core service would see two different events.
func TestReplacedParse(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		provider, name, body string
		reason               string // "" when it parses
		key, typ             string
	}{
		{"stripe", "empty body", "", providers.ReasonMalformed, "", ""},
		{"stripe", "not JSON", "id=evt_1&type=charge.succeeded", providers.ReasonMalformed, "", ""},
		{"stripe", "truncated object", `{"id":"evt_1"`, providers.ReasonMalformed, "", ""},
		{"stripe", "trailing garbage", `{"id":"evt_1"} {}`, providers.ReasonMalformed, "", ""},
		{"stripe", "JSON array", `[{"id":"evt_1"}]`, providers.ReasonMalformed, "", ""},
		{"stripe", "JSON string", `"evt_1"`, providers.ReasonMalformed, "", ""},
		{"stripe", "JSON null", `null`, providers.ReasonMalformed, "", ""},
		{"stripe", "missing id", `{"object":"event","type":"charge.succeeded"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id an object", `{"id":{"id":"evt_1"}}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id null", `{"id":null}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id empty", `{"id":""}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id with a space", `{"id":"evt 1"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id with a newline", `{"id":"evt_1\r\nX-Injected: 1"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id with non-ASCII", `{"id":"evt_é"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id too long", `{"id":"evt_` + long + `"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id key in another case", `{"ID":"evt_1"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "type not a string", `{"id":"evt_1","type":["charge.succeeded"]}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "type with a newline", `{"id":"evt_1","type":"charge\nsucceeded"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "id twice", `{"id":"evt_1","type":"charge.succeeded","id":"evt_2"}`, providers.ReasonMalformed, "", ""},
		{"stripe", "id twice, once escaped", `{"id":"evt_1","\u0069d":"evt_2"}`, providers.ReasonMalformed, "", ""},
		{"stripe", "type twice", `{"id":"evt_1","type":"charge.refunded","type":"charge.succeeded"}`, providers.ReasonMalformed, "", ""},
		{"stripe", "data twice", `{"id":"evt_1","data":{"object":{"amount":1}},"data":{"object":{"amount":2}}}`, providers.ReasonMalformed, "", ""},
		{"stripe", "unfingerprinted member twice", `{"id":"evt_1","pending_webhooks":1,"pending_webhooks":2}`, providers.ReasonMalformed, "", ""},
		{"stripe", "exact repeat, nested", `{"id":"evt_1","data":{"object":{"x":1,"x":2}}}`, providers.ReasonMalformed, "", ""},
		{"stripe", "type twice, upper-case", `{"id":"evt_1","object":"event","type":"charge.refunded","Type":"charge.succeeded"}`, providers.ReasonMalformed, "", ""},
		{"stripe", "id twice, escaped upper-case", `{"id":"evt_1","\u0049D":"evt_2"}`, providers.ReasonMalformed, "", ""},
		{"stripe", "status twice, long s (U+017F), nested", `{"id":"evt_1","data":{"object":{"status":"failed","ſtatus":"succeeded"}}}`, providers.ReasonMalformed, "", ""},
		{"stripe", "kind twice, Kelvin sign (U+212A), in an array", `{"id":"evt_1","data":{"object":{"lines":[{"kind":"a","` + "\u212a" + `ind":"b"}]}}}`, providers.ReasonMalformed, "", ""},
		{"stripe", "type spelled only another way", `{"id":"evt_1","Type":"charge.succeeded"}`, providers.ReasonNoEventKey, "", ""},
		{"stripe", "data spelled only another way", `{"id":"evt_1","type":"charge.succeeded","DATA":{"object":{"amount":1}}}`, providers.ReasonMalformed, "", ""},
		{"stripe", "names that differ by more than case", `{"id":"evt_1","type":"charge.refunded","data":{"object":{"amount":1,"amount_refunded":1,"ammount":2}}}`, "", "evt_1", "charge.refunded"},
		{"stripe", "type absent", `{"id":"evt_1"}`, "", "evt_1", ""},
		{"stripe", "type null", `{"id":"evt_1","type":null}`, "", "evt_1", ""},
		{"stripe", "id with a JSON escape", `{"id":"evt_\u0031","type":"charge.succeeded"}`, "", "evt_1", "charge.succeeded"},
		{"stripe", "thin v2 event", `{"id":"evt_test_65R9","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered"}`, "", "evt_test_65R9", "v1.billing.meter.error_report_triggered"},
		{"stripe", "surrounding white space", " \n{\"id\":\"evt_1\"}\n", "", "evt_1", ""},
		// A number is a key as written (docs/provider-specs.md); Stripe's
		// ids are strings, and the adapter refused one.
		{"stripe", "id a number", `{"id":123,"type":"charge.succeeded"}`, "", "123", "charge.succeeded"},

		{"paddle", "empty body", "", providers.ReasonMalformed, "", ""},
		{"paddle", "not JSON", "event_id=evt_1", providers.ReasonMalformed, "", ""},
		{"paddle", "JSON array", `[{"event_id":"evt_1"}]`, providers.ReasonMalformed, "", ""},
		{"paddle", "trailing garbage", `{"event_id":"evt_1"} {}`, providers.ReasonMalformed, "", ""},
		{"paddle", "missing event_id", `{"event_type":"transaction.completed","data":{}}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id null", `{"event_id":null}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id empty", `{"event_id":""}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id with a space", `{"event_id":"evt 1"}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id with a newline", `{"event_id":"evt_1\r\nX-Injected: 1"}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id with non-ASCII", `{"event_id":"evt_é"}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id too long", `{"event_id":"evt_` + long + `"}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id only in another case", `{"Event_ID":"evt_1"}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_type not a string", `{"event_id":"evt_1","event_type":["x"]}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_type with a space", `{"event_id":"evt_1","event_type":"transaction completed"}`, providers.ReasonNoEventKey, "", ""},
		{"paddle", "event_id twice", `{"event_id":"evt_1","event_id":"evt_2"}`, providers.ReasonMalformed, "", ""},
		{"paddle", "event_type twice, another case", `{"event_id":"evt_1","event_type":"transaction.payment_failed","Event_Type":"transaction.completed"}`, providers.ReasonMalformed, "", ""},
		{"paddle", "data member twice, nested", `{"event_id":"evt_1","data":{"status":"ready","ſtatus":"completed"}}`, providers.ReasonMalformed, "", ""},
		{"paddle", "event_type absent", `{"event_id":"evt_1"}`, "", "evt_1", ""},
		{"paddle", "event_type null", `{"event_id":"evt_1","event_type":null}`, "", "evt_1", ""},
		{"paddle", "escaped id", `{"event_id":"evt_\u0031","event_type":"price.created"}`, "", "evt_1", "price.created"},
		{"paddle", "event_id a number", `{"event_id":1}`, "", "1", ""},
	} {
		t.Run(tc.provider+"/"+tc.name, func(t *testing.T) {
			p := builtinProvider(t, tc.provider, "whsec_parse")
			ev, err := providertest.OneEvent(p.Parse(providers.Delivery{Body: []byte(tc.body)}))
			if tc.reason != "" {
				require.Error(t, err)
				require.Equal(t, tc.reason, providers.Reason(err), "%v", err)
				require.ErrorIs(t, err, providers.ErrMalformed)
				require.NotErrorIs(t, err, providers.ErrUnauthorized)
				require.Zero(t, ev)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.key, ev.Key)
			require.Equal(t, tc.typ, ev.Type)
		})
	}
}

// TestReplacedFingerprints pins the fingerprints the specs inherited from
// the adapters: every record stored before the adapters went carries one,
// so a retry of an event in flight across the deploy is replayed only if
// the spec computes it the same way. Stripe's is the sha256 of the
// compacted members id, object, type, api_version, account, created,
// livemode and data, in that order (legacyStripeFingerprint); Paddle's is
// pinned on the paddle-go-sdk vector, recomputed with Python (sha256 of
// {"event_id":…,"event_type":…,"occurred_at":…,"data":…} with data's
// members sorted, compact).
func TestReplacedFingerprints(t *testing.T) {
	stripe := builtinProvider(t, "stripe", "whsec_fingerprint")
	paths, err := filepath.Glob("../../fixtures/stripe/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	bodies := [][]byte{
		[]byte(vecStripeBody),
		[]byte("{\n  \"id\": \"evt_1\",\n  \"data\": { \"object\": {\"b\": 1, \"a\": \"\\u00e9\"} },\n  \"created\": 1.50e3, \"livemode\": false, \"extra\": [1]\n}"),
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		bodies = append(bodies, b)
	}
	for _, body := range bodies {
		ev, err := providertest.OneEvent(stripe.Parse(providers.Delivery{Body: body}))
		require.NoError(t, err)
		require.Equal(t, legacyStripeFingerprint(t, body), ev.Fingerprint, "%s", body)
	}

	paddle := builtinProvider(t, "paddle", "pdl_ntfset_fingerprint")
	ev, err := providertest.OneEvent(paddle.Parse(providers.Delivery{Body: []byte(vecPaddleGoBody)}))
	require.NoError(t, err)
	require.Equal(t, "evt_01hsdn97563968dy0szkmgjwh3", ev.Key)
	require.Equal(t, "price.created", ev.Type)
	require.Equal(t, "8016db132ac4053d657408a64b43ce173d339c983d94ca5e41b4c76308fba316", ev.Fingerprint)
}

// legacyStripeFingerprint is the Stripe adapter's fingerprint as it first
// computed it, decoding the body with json.Unmarshal into a map.
func legacyStripeFingerprint(t *testing.T, body []byte) string {
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

// TestReplacedFingerprintEdits: what a gateway changes between its
// retries of one event (Stripe's pending_webhooks and request, Paddle's
// notification_id on a replay, the body's layout) leaves the fingerprint
// as it is, so the retry is replayed; a change to the event itself gives
// another, so a different payload under the same key is 422. Moving bytes
// between Stripe's fingerprinted members gives another fingerprint too.
func TestReplacedFingerprintEdits(t *testing.T) {
	compact := func(t *testing.T, b []byte) []byte {
		var buf bytes.Buffer
		require.NoError(t, json.Compact(&buf, b))
		return buf.Bytes()
	}
	indent := func(t *testing.T, b []byte) []byte {
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, b, "", "\t"))
		return append(buf.Bytes(), '\n')
	}
	type edit struct {
		name     string
		edit     func(t *testing.T, b []byte) []byte
		wantSame bool
	}
	swap := func(old, new string) func(t *testing.T, b []byte) []byte {
		return func(t *testing.T, b []byte) []byte { return replaceOnce(t, b, old, new) }
	}
	for _, g := range []struct {
		provider, fixture string
		edits             []edit
	}{{"stripe", "payment_intent_succeeded.json", []edit{
		{"pending_webhooks changed", swap(`"pending_webhooks": 2`, `"pending_webhooks": 3`), true},
		{"pending_webhooks removed", swap(`"pending_webhooks": 2,`, ``), true},
		{"request changed", func(t *testing.T, b []byte) []byte {
			b = replaceOnce(t, b, `"id": "req_Wbhkd0Req1201"`, `"id": "req_Other"`)
			return replaceOnce(t, b, `"idempotency_key": "8d4c2f6e-1a3b-4c5d-9e7f-0a1b2c3d1201"`, `"idempotency_key": null`)
		}, true},
		{"compacted", compact, true},
		{"re-indented with tabs and a trailing newline", indent, true},
		{"space inside data only", swap(`"amount": 4900,`, `"amount"  :  4900 ,`), true},
		{"data.object.amount changed", swap(`"amount": 4900,`, `"amount": 4901,`), false},
		{"data.object.status changed", swap(`"status": "succeeded"`, `"status": "canceled"`), false},
		{"data.previous_attributes added", swap(`"data": {`, `"data": {"previous_attributes": {"status": "processing"},`), false},
		{"type changed", swap(`"type": "payment_intent.succeeded"`, `"type": "payment_intent.canceled"`), false},
		{"created changed", swap(`"created": 1741946412`, `"created": 1741946413`), false},
		{"livemode changed", swap("\"livemode\": false,\n  \"pending", "\"livemode\": true,\n  \"pending"), false},
		{"api_version changed", swap(`"api_version": "2025-06-30.basil"`, `"api_version": "2025-09-30.clover"`), false},
		{"account added", swap(`"object": "event",`, `"object": "event", "account": "acct_1",`), false},
		{"account null instead of absent", swap(`"object": "event",`, `"object": "event", "account": null,`), false},
	}}, {"paddle", "transaction_completed.json", []edit{
		{"notification_id changed (a replay)", swap("ntf_01jwh3k8t2n6p0s4w8y3a7e5f9", "ntf_01jwzzzzzzzzzzzzzzzzzzzzzz"), true},
		{"compacted", compact, true},
		{"members reordered inside data", func(t *testing.T, b []byte) []byte {
			b = replaceOnce(t, b, `"origin": "web",`, ``)
			return replaceOnce(t, b, `"collection_mode": "automatic",`, `"collection_mode": "automatic", "origin": "web",`)
		}, true},
		{"total changed", swap(`"grand_total": "16331"`, `"grand_total": "16332"`), false},
		{"status changed", swap(`"status": "completed"`, `"status": "past_due"`), false},
		{"event_type changed", swap(`"transaction.completed"`, `"transaction.paid"`), false},
		{"occurred_at changed", swap(`"2025-06-02T09:14:27.518204Z"`, `"2025-06-02T09:14:27.518205Z"`), false},
	}}} {
		p := builtinProvider(t, g.provider, "whsec_edits")
		orig := readFixture(t, g.provider, g.fixture)
		want, err := providertest.OneEvent(p.Parse(providers.Delivery{Body: orig}))
		require.NoError(t, err)
		for _, e := range g.edits {
			t.Run(g.provider+"/"+e.name, func(t *testing.T) {
				edited := e.edit(t, bytes.Clone(orig))
				require.NotEqual(t, orig, edited)
				got, err := providertest.OneEvent(p.Parse(providers.Delivery{Body: edited}))
				require.NoError(t, err)
				require.Equal(t, want.Key, got.Key)
				require.Equal(t, e.wantSame, want.Fingerprint == got.Fingerprint)
			})
		}
	}

	stripe := builtinProvider(t, "stripe", "whsec_edits")
	seen := map[string]string{}
	for _, body := range []string{
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
	} {
		ev, err := providertest.OneEvent(stripe.Parse(providers.Delivery{Body: []byte(body)}))
		require.NoError(t, err, body)
		require.NotContains(t, seen, ev.Fingerprint, "%s collides with %s", body, seen[ev.Fingerprint])
		seen[ev.Fingerprint] = body
	}
}
