package doku_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/doku"
	"github.com/webhookd/webhookd/providers/providertest"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

func fixtureNames(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return names
}

func TestParseFixtures(t *testing.T) {
	tests := []struct{ file, wantKey, wantType string }{
		{"credit_card_failed.json", "WH-INV-20250602-0044:CREDIT_CARD:FAILED", "CREDIT_CARD.FAILED"},
		{"credit_card_success.json", "WH-INV-20250602-0043:CREDIT_CARD:SUCCESS", "CREDIT_CARD.SUCCESS"},
		{"emoney_ovo_success.json", "WH-INV-20250602-0045:EMONEY:SUCCESS", "EMONEY.SUCCESS"},
		{"va_bca_success.json", "WH-INV-20250602-0041:VIRTUAL_ACCOUNT:SUCCESS", "VIRTUAL_ACCOUNT.SUCCESS"},
		{"va_mandiri_success.json", "WH-INV-20250602-0042:VIRTUAL_ACCOUNT:SUCCESS", "VIRTUAL_ACCOUNT.SUCCESS"},
	}
	require.Len(t, fixtureNames(t), len(tests), "one row per fixture")
	a := newAdapter(t, vecTime)
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

func TestParseVector(t *testing.T) {
	ev, err := providertest.OneEvent(newAdapter(t, vecTime).Parse(providers.Delivery{Body: []byte(vecBody)}))
	require.NoError(t, err)
	require.Equal(t, "INV-20210124-0001:VIRTUAL_ACCOUNT:SUCCESS", ev.Key)
	require.Equal(t, "VIRTUAL_ACCOUNT.SUCCESS", ev.Type)
	// Pinned: changing the encoding would give in-flight retries a
	// different fingerprint (422) across a deploy. Recomputed with Python:
	// sha256 of the compact JSON below.
	//   {"order":{"invoice_number":"INV-20210124-0001","amount":150000},"service":{"id":"VIRTUAL_ACCOUNT"},
	//    "acquirer":{"id":"BCA"},"channel":{"id":"VIRTUAL_ACCOUNT_BCA"},
	//    "transaction":{"status":"SUCCESS","original_request_id":"15022aab-444f-4b04-afa8-ddfce89432ec"}}
	require.Equal(t, "27e537828322b138492960522a2517335e054667449018a6ce653f344fae87f4", ev.Fingerprint)
}

func TestParseErrors(t *testing.T) {
	ok := `"service":{"id":"VIRTUAL_ACCOUNT"},"transaction":{"status":"SUCCESS"}`
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{"empty body", "", doku.ErrNotJSON},
		{"not JSON", "order.invoice_number=INV-1", doku.ErrNotJSON},
		{"JSON array", `[{}]`, doku.ErrNotJSON},
		{"order not an object", `{"order":"INV-1",` + ok + `}`, doku.ErrNotJSON},
		{"acquirer not an object", `{"order":{"invoice_number":"INV-1"},"acquirer":"BCA",` + ok + `}`, doku.ErrNotJSON},
		{"no order", `{` + ok + `}`, doku.ErrNoEventKey},
		{"no invoice_number", `{"order":{"amount":1},` + ok + `}`, doku.ErrNoEventKey},
		{"invoice_number a number", `{"order":{"invoice_number":1},` + ok + `}`, doku.ErrNoEventKey},
		{"invoice_number empty", `{"order":{"invoice_number":""},` + ok + `}`, doku.ErrNoEventKey},
		{"invoice_number with a space", `{"order":{"invoice_number":"INV 1"},` + ok + `}`, doku.ErrNoEventKey},
		{"invoice_number too long", `{"order":{"invoice_number":"` + strings.Repeat("9", doku.MaxFieldBytes+1) + `"},` + ok + `}`, doku.ErrNoEventKey},
		{"no service", `{"order":{"invoice_number":"INV-1"},"transaction":{"status":"SUCCESS"}}`, doku.ErrNoEventKey},
		{"no status", `{"order":{"invoice_number":"INV-1"},"service":{"id":"VIRTUAL_ACCOUNT"},"transaction":{}}`, doku.ErrNoEventKey},
		{"service.id with a colon", `{"order":{"invoice_number":"INV-1"},"service":{"id":"VA:X"},"transaction":{"status":"SUCCESS"}}`, doku.ErrNoEventKey},
		{"status with a colon", `{"order":{"invoice_number":"INV-1"},"service":{"id":"VA"},"transaction":{"status":"X:SUCCESS"}}`, doku.ErrNoEventKey},
		{"status with a newline", `{"order":{"invoice_number":"INV-1"},"service":{"id":"VA"},"transaction":{"status":"SUCCESS\r\nX: 1"}}`, doku.ErrNoEventKey},
		{"status only in another case", `{"order":{"invoice_number":"INV-1"},"service":{"id":"VA"},"transaction":{"Status":"SUCCESS"}}`, doku.ErrNoEventKey},
		{"status twice, another case", `{"order":{"invoice_number":"INV-1"},` + ok[:len(ok)-1] + `,"STATUS":"FAILED"}}`, doku.ErrNotJSON},
		{"service twice, long s", `{"order":{"invoice_number":"INV-1"},"\u017fervice":{"id":"X"},"transaction":{"status":"SUCCESS"},"service":{"id":"VA"}}`, doku.ErrNotJSON},
		{"order twice", `{"order":{"invoice_number":"INV-1"},"order":{"invoice_number":"INV-2"},` + ok + `}`, doku.ErrNotJSON},
		{"amount twice, upper case", `{"order":{"invoice_number":"INV-1","amount":1,"AMOUNT":2},` + ok + `}`, doku.ErrNotJSON},
	}
	a := newAdapter(t, vecTime)
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

// TestParseKeysCannotCollide: an invoice number may hold ":" (merchants
// choose it), but service.id and transaction.status may not, so a key splits
// one way only from the right.
func TestParseKeysCannotCollide(t *testing.T) {
	a := newAdapter(t, vecTime)
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(`{"order":{"invoice_number":"INV:1"},"service":{"id":"VA"},"transaction":{"status":"SUCCESS"}}`)}))
	require.NoError(t, err)
	require.Equal(t, "INV:1:VA:SUCCESS", ev.Key)
	_, err = providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(`{"order":{"invoice_number":"INV"},"service":{"id":"1:VA"},"transaction":{"status":"SUCCESS"}}`)}))
	require.ErrorIs(t, err, doku.ErrNoEventKey)
}

func replaceOnce(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	require.Equal(t, 1, bytes.Count(b, []byte(old)), "occurrences of %q", old)
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

func TestFingerprint(t *testing.T) {
	orig := readFixture(t, "credit_card_success.json")
	tests := []struct {
		name     string
		edit     func(t *testing.T, b []byte) []byte
		wantSame bool
	}{
		{"compacted", func(t *testing.T, b []byte) []byte {
			var buf bytes.Buffer
			require.NoError(t, json.Compact(&buf, b))
			return buf.Bytes()
		}, true},
		{"transaction.date changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"2025-06-02T06:31:05Z"`, `"2025-06-02T06:31:06Z"`)
		}, true},
		{"card details changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"PAYMENT APPROVED"`, `"APPROVED"`)
		}, true},
		{"amount changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"amount": 89000`, `"amount": 89001`)
		}, false},
		{"amount written as a decimal", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"amount": 89000`, `"amount": 89000.00`)
		}, false},
		{"acquirer changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `"id": "BANK_MANDIRI"`, `"id": "BCA"`)
		}, false},
		{"original_request_id changed", func(t *testing.T, b []byte) []byte {
			return replaceOnce(t, b, `5b8f3a1d-c6e2-4f70-8d19-2a4c7e9b3f05`, `5b8f3a1d-c6e2-4f70-8d19-2a4c7e9b3f06`)
		}, false},
	}
	a := newAdapter(t, vecTime)
	want, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: orig}))
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: tt.edit(t, bytes.Clone(orig))}))
			require.NoError(t, err)
			require.Equal(t, want.Key, got.Key)
			require.Equal(t, tt.wantSame, want.Fingerprint == got.Fingerprint)
		})
	}
}
