package midtrans_test

import (
	"bytes"
	"context"
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
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/providertest"
)

const fixtures = "../../fixtures/midtrans"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

// refundDigest is the key part Parse uses for a refund_key that is not a
// short printable token, computed here independently of the adapter.
// fraudDigest is the key part of a fraud_status Midtrans does not document.
func fraudDigest(fraudStatus string) string {
	sum := sha256.Sum256([]byte(fraudStatus))
	return "f" + hex.EncodeToString(sum[:])[:32]
}

func refundDigest(refundKey string) string {
	sum := sha256.Sum256([]byte(refundKey))
	return "h" + hex.EncodeToString(sum[:])[:32]
}

func TestParseFixtures(t *testing.T) {
	const (
		va   = "6f1c2b7e-3a41-4d8e-9b1a-0c2d3e4f5a61"
		card = "0b9e4d2a-71c5-4f60-a8d3-5e2f1c9b7a04"
		qris = "c4a7e019-2d6b-4b8f-9e35-7f1a0d6c2b93"
		gp   = "9d3f6a21-8c4e-4a7b-b2d0-61e5f7a8c3d2"
	)
	tests := []struct {
		file     string
		wantKey  string
		wantType string
	}{
		{"bank_transfer_pending.json", va + ":pending:accept", "pending"},
		{"bank_transfer_settlement.json", va + ":settlement:accept", "settlement"},
		{"credit_card_capture_challenge.json", card + ":capture:challenge", "capture"},
		{"credit_card_capture_accept.json", card + ":capture:accept", "capture"},
		{"credit_card_settlement.json", card + ":settlement:accept", "settlement"},
		{"qris_expire.json", qris + ":expire:accept", "expire"},
		{"gopay_partial_refund_1.json", gp + ":partial_refund:accept:WH-REFUND-2044-01", "partial_refund"},
		{"gopay_partial_refund_2.json", gp + ":partial_refund:accept:WH-REFUND-2044-02", "partial_refund"},
	}
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.Len(t, paths, len(tests), "every fixture has a row here")

	a := newAdapter(t, testKey)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := readFixture(t, tt.file)
			// The fixtures are signed with the documented test key, so they
			// verify as they are.
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}))
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, ev.Key)
			require.Equal(t, tt.wantType, ev.Type)
			require.Regexp(t, `^[0-9a-f]{64}$`, ev.Fingerprint)
		})
	}
}

func TestParseKeys(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantKey  string
		wantType string
		wantErr  error
	}{
		{name: "status only", body: `{"transaction_id":"t1","transaction_status":"pending"}`, wantKey: "t1:pending", wantType: "pending"},
		{name: "with fraud_status", body: `{"transaction_id":"t1","transaction_status":"capture","fraud_status":"challenge"}`,
			wantKey: "t1:capture:challenge", wantType: "capture"},
		{name: "with refund_key", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":"r-1"}`,
			wantKey: "t1:refund:r-1", wantType: "refund"},
		{name: "with both", body: `{"transaction_id":"t1","transaction_status":"partial_refund","fraud_status":"accept","refund_key":"r-2"}`,
			wantKey: "t1:partial_refund:accept:r-2", wantType: "partial_refund"},
		// A colon would let refund_key pose as fraud_status:refund_key
		// (see TestParseRefundKeysCannotCollide): digested.
		{name: "refund_key with a colon", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":"a:b"}`,
			wantKey: "t1:refund:" + refundDigest("a:b"), wantType: "refund"},
		// A plain refund_key shaped like a digest would pose as another
		// refund_key's digest: digested too.
		{name: "refund_key shaped like a digest", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":"` + refundDigest("r 1") + `"}`,
			wantKey: "t1:refund:" + refundDigest(refundDigest("r 1")), wantType: "refund"},
		{name: "refund_key like a digest but upper-case hex stays", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":"h` + strings.Repeat("A", 32) + `"}`,
			wantKey: "t1:refund:h" + strings.Repeat("A", 32), wantType: "refund"},
		{name: "null and empty optional fields count as absent",
			body:    `{"transaction_id":"t1","transaction_status":"settlement","fraud_status":null,"refund_key":""}`,
			wantKey: "t1:settlement", wantType: "settlement"},
		{name: "order_id plays no part", body: `{"order_id":"o-1","transaction_id":"t1","transaction_status":"settlement"}`,
			wantKey: "t1:settlement", wantType: "settlement"},
		{name: "longest fields", wantType: strings.Repeat("s", midtrans.MaxFieldBytes),
			body: `{"transaction_id":"` + strings.Repeat("t", midtrans.MaxFieldBytes) + `","transaction_status":"` + strings.Repeat("s", midtrans.MaxFieldBytes) +
				`","fraud_status":"` + strings.Repeat("f", midtrans.MaxFieldBytes) + `","refund_key":"` + strings.Repeat("r", midtrans.MaxFieldBytes) + `"}`,
			wantKey: strings.Repeat("t", midtrans.MaxFieldBytes) + ":" + strings.Repeat("s", midtrans.MaxFieldBytes) + ":" +
				fraudDigest(strings.Repeat("f", midtrans.MaxFieldBytes)) + ":" + strings.Repeat("r", midtrans.MaxFieldBytes)},

		{name: "not JSON", body: `transaction_id=t1`, wantErr: midtrans.ErrNotJSON},
		{name: "JSON null", body: `null`, wantErr: midtrans.ErrNotJSON},
		{name: "duplicate status", body: `{"transaction_id":"t1","transaction_status":"pending","transaction_status":"settlement"}`, wantErr: midtrans.ErrNotJSON},
		{name: "no transaction_id", body: `{"transaction_status":"pending"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "empty transaction_id", body: `{"transaction_id":"","transaction_status":"pending"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "numeric transaction_id", body: `{"transaction_id":42,"transaction_status":"pending"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "transaction_id with a colon", body: `{"transaction_id":"t1:settlement","transaction_status":"pending"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "transaction_id with a space", body: `{"transaction_id":"t 1","transaction_status":"pending"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "transaction_id with CRLF", body: `{"transaction_id":"t1\r\nX: y","transaction_status":"pending"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "transaction_id too long", body: `{"transaction_id":"` + strings.Repeat("t", midtrans.MaxFieldBytes+1) + `","transaction_status":"pending"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "no transaction_status", body: `{"transaction_id":"t1"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "transaction_status null", body: `{"transaction_id":"t1","transaction_status":null}`, wantErr: midtrans.ErrNoEventKey},
		{name: "non-ASCII status", body: `{"transaction_id":"t1","transaction_status":"séttlement"}`, wantErr: midtrans.ErrNoEventKey},
		{name: "fraud_status a number", body: `{"transaction_id":"t1","transaction_status":"capture","fraud_status":1}`, wantErr: midtrans.ErrInvalidField},
		{name: "fraud_status with a colon", body: `{"transaction_id":"t1","transaction_status":"capture","fraud_status":"a:b"}`, wantErr: midtrans.ErrInvalidField},
		{name: "refund_key a number", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":7}`, wantErr: midtrans.ErrInvalidField},
		// A merchant-chosen refund_key that cannot go into a key as it is
		// goes in as a digest of its decoded value, never refused.
		{name: "refund_key with a space", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":"r 1"}`,
			wantKey: "t1:refund:" + refundDigest("r 1"), wantType: "refund"},
		{name: "non-ASCII refund_key", body: `{"transaction_id":"t1","transaction_status":"partial_refund","fraud_status":"accept","refund_key":"rétour-1"}`,
			wantKey: "t1:partial_refund:accept:" + refundDigest("rétour-1"), wantType: "partial_refund"},
		{name: "non-ASCII refund_key escaped", body: `{"transaction_id":"t1","transaction_status":"partial_refund","fraud_status":"accept","refund_key":"r\u00e9tour-1"}`,
			wantKey: "t1:partial_refund:accept:" + refundDigest("rétour-1"), wantType: "partial_refund"},
		{name: "refund_key with a line break", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":"r\r\nX: y"}`,
			wantKey: "t1:refund:" + refundDigest("r\r\nX: y"), wantType: "refund"},
		{name: "refund_key too long", body: `{"transaction_id":"t1","transaction_status":"refund","refund_key":"` + strings.Repeat("r", midtrans.MaxFieldBytes+1) + `"}`,
			wantKey: "t1:refund:" + refundDigest(strings.Repeat("r", midtrans.MaxFieldBytes+1)), wantType: "refund"},
	}
	a := newAdapter(t, testKey)
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
			require.LessOrEqual(t, len("midtrans:"+ev.Key), dedupe.MaxKeyLen, "the store must take the key")
		})
	}
}

// TestParseRefundKeysCannotCollide: refund_key is the merchant's and goes
// last in the key, after an optional fraud_status, so a refund_key holding a
// colon could spell another notification's fraud_status:refund_key, and a
// refund_key alone another's fraud_status alone. Two different
// notifications of one transaction must never share a key: the second
// would get 422 and never be forwarded.
func TestParseRefundKeysCannotCollide(t *testing.T) {
	bodies := []string{
		// The shifted pairs: fraud_status alone, and refund_key alone.
		`{"transaction_id":"t1","transaction_status":"partial_refund","fraud_status":"accept"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","refund_key":"accept"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","fraud_status":"x"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","refund_key":"x"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","refund_key":"` + fraudDigest("x") + `"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","fraud_status":"accept","refund_key":"R1"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","refund_key":"accept:R1"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","fraud_status":"accept","refund_key":"R1:x"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","refund_key":"accept:R1:x"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","refund_key":"r 1"}`,
		`{"transaction_id":"t1","transaction_status":"partial_refund","refund_key":"` + refundDigest("r 1") + `"}`,
	}
	a := newAdapter(t, testKey)
	seen := map[string]string{}
	for _, body := range bodies {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(body)}))
		require.NoError(t, err, body)
		require.True(t, providers.IsToken(ev.Key, dedupe.MaxKeyLen), ev.Key)
		require.NotContains(t, seen, ev.Key, "%s and %s share a key", seen[ev.Key], body)
		seen[ev.Key] = body
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
	orig := readFixture(t, "gopay_partial_refund_1.json")
	tests := []struct {
		name     string
		edit     func(t *testing.T, b []byte) []byte
		wantSame bool
	}{
		// What may differ between two notifications of one event.
		{"signature_key changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"signature_key": "`, `"signature_key": "0`)
		}, true},
		{"status_message changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"midtrans payment notification"`, `"Success, transaction is found"`)
		}, true},
		{"times changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"settlement_time": "2026-03-10 19:02:48"`, `"settlement_time": "2026-03-10 19:02:49"`)
		}, true},
		{"a new field added", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"currency": "IDR"`, `"currency": "IDR", "issuer": "gopay"`)
		}, true},
		{"compacted", func(t *testing.T, b []byte) []byte {
			var buf bytes.Buffer
			require.NoError(t, json.Compact(&buf, b))
			return buf.Bytes()
		}, true},

		// A different payload under the same key.
		{"gross_amount changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"gross_amount": "310000.00"`, `"gross_amount": "310001.00"`)
		}, false},
		{"gross_amount as a number", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"gross_amount": "310000.00"`, `"gross_amount": 310000.00`)
		}, false},
		{"refund_amount changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"refund_amount": "60000.00"`, `"refund_amount": "70000.00"`)
		}, false},
		{"order_id changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"order_id": "WH-ORDER-2044"`, `"order_id": "WH-ORDER-2045"`)
		}, false},
		{"currency changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"currency": "IDR"`, `"currency": "USD"`)
		}, false},
		{"payment_type changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"payment_type": "gopay"`, `"payment_type": "qris"`)
		}, false},
		{"status_code changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"status_code": "200"`, `"status_code": "201"`)
		}, false},
	}
	a := newAdapter(t, testKey)
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
