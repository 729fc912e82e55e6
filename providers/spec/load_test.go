package spec

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docExample is the full example of docs/provider-specs.md, kept there and
// in testdata/paddle-billing.yaml alike (TestDocExampleIsTestdata).
const docExample = "testdata/paddle-billing.yaml"

func readSpec(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// TestDocExampleIsTestdata holds the documentation's full example to the
// file the tests load, so that the example people copy is one that loads.
func TestDocExampleIsTestdata(t *testing.T) {
	doc := readSpec(t, "../../docs/provider-specs.md")
	start := strings.Index(doc, "```yaml\n# Paddle")
	require.GreaterOrEqual(t, start, 0)
	block := doc[start+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	require.Equal(t, readSpec(t, docExample), block)
}

func TestLoadDocExample(t *testing.T) {
	s, err := Load(docExample, []byte(readSpec(t, docExample)))
	require.NoError(t, err)
	require.Equal(t, "paddle-billing", s.Name())
	require.Equal(t, "PADDLE_BILLING_SECRETS", s.Entry().Secret)
}

// TestLoadRefuses is the list of bad specs docs/provider-specs.md promises
// to refuse, each with one line naming the file and the problem.
func TestLoadRefuses(t *testing.T) {
	base := readSpec(t, docExample)
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"unknown algorithm", "algorithm: hmac-sha256", "algorithm: hmac-md5",
			`signature.algorithm: unknown "hmac-md5" (hmac-sha1, hmac-sha256, hmac-sha512 or token)`},
		{"unknown encoding", "encoding: hex", "encoding: base32", `signature.encoding: unknown "base32"`},
		{"unknown field", "  window: both", "  windw: both", "field windw not found"},
		{"header never sent", `signed: "{{signature.ts}}:{{body}}"`, `signed: "{{signature.ts}}:{{header.X-Request-Id}}{{body}}"`,
			"signature: header X-Request-Id is never sent by an example"},
		{"example fails", "h1=6c05ef8f", "h1=7c05ef8f", "example paddle-go-sdk: does not verify: delivery not authenticated: paddle-billing: no valid signature"},
		{"example too old", "now: 2024-03-20T10:07:40Z", "now: 2024-03-20T10:17:40Z", "example paddle-go-sdk: does not verify: delivery not authenticated: paddle-billing: timestamp older than the tolerance"},
		{"key path missing", `key: "{{json.event_id}}"`, `key: "{{json.data.event_id}}"`,
			"example paddle-go-sdk: does not parse: malformed delivery: paddle-billing: no usable event key (json.data.event_id is missing)"},
		{"wrong expected key", "key: evt_01hsdn97563968dy0szkmgjwh3", "key: evt_other", `event key is "evt_01hsdn97563968dy0szkmgjwh3", not "evt_other"`},
		{"key from unsigned body", `signed: "{{signature.ts}}:{{body}}"`, `signed: "{{signature.ts}}:"`,
			"event.key: reads the body, which signature.signed does not include"},
		{"timestamp not signed", `value: "{{signature.ts}}"`, `value: "{{signature.t}}"`,
			"timestamp.value: signature.t is not part of signature.signed, so it would prove nothing"},
		{"tolerance not a duration", "tolerance: TOLERANCE", "tolerance: SECRETS", `timestamp.tolerance: "SECRETS" is not a setting of type duration`},
		{"unknown setting", `signed: "{{signature.ts}}:{{body}}"`, `signed: "{{setting.URL}}{{signature.ts}}:{{body}}"`,
			"signature.signed: setting URL is not declared in settings"},
		{"unknown reference", `type: "{{json.event_type}}"`, `type: "{{event_type}}"`, `unknown reference "event_type"`},
		{"body in key", `key: "{{json.event_id}}"`, `key: "{{body}}"`, "body references are not allowed here"},
		{"bad name", "name: paddle-billing", "name: Paddle", `name: "Paddle" is not 2 to 32`},
		{"bad variable", "variable: SECRETS", "variable: secrets", `secrets.variable: "secrets" is not an upper-case variable name`},
		{"token with encoding", "algorithm: hmac-sha256", "algorithm: token", "signature: a token is compared as sent"},
		{"no examples", "examples:", "examples: []\nunused:", "field unused not found"},
		{"key given twice", "name: paddle-billing", "name: paddle-billing\nname: other", `mapping key "name" already defined`},
		{"timestamp left unchecked", "timestamp:\n  value: \"{{signature.ts}}\"\n  unit: s\n  tolerance: TOLERANCE\n  window: both\n", "",
			"signature.signed: reads signature.ts, which is named like a timestamp: declare it as timestamp.value, or a capture would verify for ever"},
		{"another timestamp left unchecked", `signed: "{{signature.ts}}:{{body}}"`, `signed: "{{signature.ts}}:{{header.X-Request-Timestamp}}{{body}}"`,
			"signature.signed: reads header.X-Request-Timestamp, which is named like a timestamp"},
		{"both without a tolerance", "  tolerance: TOLERANCE\n", "", "timestamp.window: both needs a tolerance"},
		{"key values joined", `key: "{{json.event_id}}"`, `key: "{{json.event_id}}{{json.event_type}}"`,
			"event.key: json.event_id is followed by json.event_type with no text between them, so a key would not split back into its values one way"},
		{"ack without batch", "examples:", "ack: {status: 200}\nexamples:", "event: batch_body and ack are for batches only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, base, tt.old)
			_, err := Load("specs/acme.yaml", []byte(strings.Replace(base, tt.old, tt.new, 1)))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.True(t, strings.HasPrefix(err.Error(), "specs/acme.yaml: "), err.Error())
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestLoadRefusesUnboundKeyParts: a key part that one signed text admits
// in several values would let one genuine request claim several keys.
func TestLoadRefusesUnboundKeyParts(t *testing.T) {
	base := readSpec(t, "builtin/mercadopago.yaml")
	const signed = `signed: "id:{{query.data.id | lower}};request-id:{{header.x-request-id}};ts:{{signature.ts}};"`
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"keyed as sent, signed lowered", `key: "{{query.data.id | lower}}:`, `key: "{{query.data.id}}:`,
			"event.key: query.data.id is lower-cased in signature.signed, so the key must lower it too"},
		{"joined to the next value", signed, `signed: "id:{{query.data.id | lower}}{{header.x-request-id}};ts:{{signature.ts}};"`,
			"event.key: query.data.id is joined to header.X-Request-Id in signature.signed"},
		{"joined to the previous value", signed, `signed: "id:{{signature.ts}}{{query.data.id | lower}};request-id:{{header.x-request-id}};"`,
			"event.key: query.data.id is joined to signature.ts in signature.signed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, base, tt.old)
			_, err := Load("specs/mp.yaml", []byte(strings.Replace(base, tt.old, tt.new, 1)))
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestLoadRefusesKeyOfNoDelivery: a key of settings alone gives every
// delivery one key, and a batch key that reads nothing of the element
// every element: all but the first would be 422 on every retry.
func TestLoadRefusesKeyOfNoDelivery(t *testing.T) {
	base := readSpec(t, "builtin/gocardless.yaml")
	_, err := Load("specs/gc.yaml", []byte(base))
	require.NoError(t, err)
	settingKey := strings.Replace(base, `key: "{{json.id}}"`, `key: "{{setting.ID}}"`, 1)
	settingKey = strings.Replace(settingKey, "signature:\n", "settings: [{variable: ID, default: x, help: h}]\nsignature:\n", 1)
	headerKey := strings.Replace(base, `key: "{{json.id}}"`, `key: "{{header.Webhook-Id}}"`, 1)
	headerKey = strings.Replace(headerKey, `signed: "{{body}}"`, `signed: "{{header.Webhook-Id}}:{{body}}"`, 1)
	headerKey = strings.Replace(headerKey, "    headers:\n", "    headers:\n      Webhook-Id: WH1\n", 1)
	single := strings.Replace(settingKey, "  batch: events\n", "", 1)
	_, err = Load("specs/gc.yaml", []byte(single))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "event.key: required, with at least one reference to the delivery")
	_, err = Load("specs/gc.yaml", []byte(settingKey))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = Load("specs/gc.yaml", []byte(headerKey))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "event.key: reads nothing of a batch's element")
}

func TestLoadRefusesEmptyAndSecondDocument(t *testing.T) {
	_, err := Load("a.yaml", nil)
	require.EqualError(t, err, "a.yaml: empty file")
	_, err = Load("a.yaml", []byte(readSpec(t, docExample)+"---\nname: x\n"))
	require.EqualError(t, err, "a.yaml: more than one YAML document")
}

func TestLoadPath(t *testing.T) {
	specs, err := LoadPath("testdata")
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	_, err = LoadPath(t.TempDir())
	require.ErrorContains(t, err, "no *.yaml spec files")
	_, err = LoadPath("testdata/absent.yaml")
	require.Error(t, err)
}

// TestLoadErrorKinds: a field's problem wraps ErrInvalid, a failing
// example ErrExample, so that callers can tell them apart.
func TestLoadErrorKinds(t *testing.T) {
	base := readSpec(t, docExample)
	_, err := Load("a.yaml", []byte(strings.Replace(base, "encoding: hex", "encoding: hax", 1)))
	require.ErrorIs(t, err, ErrInvalid)
	require.Equal(t, `a.yaml: signature.encoding: unknown "hax" (hex, base64 or base64url)`, err.Error())
	_, err = Load("a.yaml", []byte(strings.Replace(base, "now: 2024-03-20T10:07:40Z", "now: 2025-03-20T10:07:40Z", 1)))
	require.ErrorIs(t, err, ErrExample)
	require.ErrorIs(t, err, ErrTooOld)
}

func TestTimestampName(t *testing.T) {
	for name, want := range map[string]bool{
		"t": true, "ts": true, "X-Timestamp": true, "Webhook-Timestamp": true, "Request-Timestamp": true,
		"Paypal-Transmission-Time": true, "Date": true, "x_request_timestamp": true, "sent.epoch": true,
		"X-Request-Id": false, "data.id": false, "v1": false, "h1": false, "X-Shopify-Topic": false, "tsid": false,
	} {
		require.Equal(t, want, timestampName(name), name)
	}
}
