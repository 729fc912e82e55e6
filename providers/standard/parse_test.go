package standard_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/standard"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

func idHeader(id string) http.Header {
	h := vecHeader()
	h.Set(standard.HeaderID, id)
	return h
}

func TestParseFixtures(t *testing.T) {
	tests := []struct{ file, wantType string }{
		{"invoice_paid.json", "invoice.paid"},
		{"payment_succeeded.json", "payment.succeeded"},
		{"payment_failed.json", "payment.failed"},
		{"refund_created.json", "refund.created"},
	}
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.Len(t, paths, len(tests), "every fixture has a row here")
	a := newAdapter(t, vecNow)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := readFixture(t, tt.file)
			signed, err := a.Sign(body)
			body, h := signed.Body, signed.Header
			require.NoError(t, err)
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Header: h, Body: body}))
			require.NoError(t, err)
			require.Equal(t, h.Get(standard.HeaderID), ev.Key)
			require.Equal(t, tt.wantType, ev.Type)
			sum := sha256.Sum256(body)
			require.Equal(t, hex.EncodeToString(sum[:]), ev.Fingerprint)
		})
	}
}

// TestParse walks the key and type rules of docs/contract.md.
func TestParse(t *testing.T) {
	long := strings.Repeat("a", standard.MaxIDBytes)
	tests := []struct {
		name     string
		header   http.Header
		body     string
		wantKey  string
		wantType string
		wantErr  error
	}{
		{name: "webhook-id and type", header: vecHeader(), body: `{"type":"invoice.paid","data":{}}`, wantKey: vecID, wantType: "invoice.paid"},
		{name: "svix-id", header: vecHeader(svixNames...), body: `{"type":"invoice.paid"}`, wantKey: vecID, wantType: "invoice.paid"},
		{name: "JSON object without type", header: vecHeader(), body: `{"test": 2432232314}`, wantKey: vecID},
		{name: "null type", header: vecHeader(), body: `{"type":null}`, wantKey: vecID},
		{name: "empty type", header: vecHeader(), body: `{"type":""}`, wantKey: vecID},
		{name: "nested type is not the type", header: vecHeader(), body: `{"data":{"type":"x.y"}}`, wantKey: vecID},
		{name: "not JSON", header: vecHeader(), body: `plain text`, wantKey: vecID},
		{name: "empty body", header: vecHeader(), body: ``, wantKey: vecID},
		{name: "JSON array", header: vecHeader(), body: `[{"type":"invoice.paid"}]`, wantKey: vecID},
		{name: "JSON string", header: vecHeader(), body: `"invoice.paid"`, wantKey: vecID},
		{name: "broken JSON object", header: vecHeader(), body: `{"type":"invoice.paid"`, wantKey: vecID},
		{name: "id with a colon is one part", header: idHeader("msg:1"), body: `{}`, wantKey: "msg:1"},
		{name: "longest id", header: idHeader(long), body: `{}`, wantKey: long},

		{name: "no id", header: http.Header{standard.HeaderTimestamp: {vecTS}, standard.HeaderSignature: {vecSig}}, body: `{}`, wantErr: standard.ErrNoEventKey},
		{name: "id too long", header: idHeader(long + "a"), body: `{}`, wantErr: standard.ErrNoEventKey},
		{name: "id with a space", header: idHeader("msg 1"), body: `{}`, wantErr: standard.ErrNoEventKey},
		{name: "id with non-ASCII", header: idHeader("msg_é"), body: `{}`, wantErr: standard.ErrNoEventKey},
		{name: "two ids", header: func() http.Header { h := vecHeader(); h.Add(standard.HeaderID, "msg_2"); return h }(), body: `{}`, wantErr: standard.ErrNoEventKey},
		{name: "type not a string", header: vecHeader(), body: `{"type":7}`, wantErr: standard.ErrInvalidEventType},
		{name: "type with a space", header: vecHeader(), body: `{"type":"invoice paid"}`, wantErr: standard.ErrInvalidEventType},
		{name: "type with CRLF", header: vecHeader(), body: `{"type":"a\r\nX-Injected: 1"}`, wantErr: standard.ErrInvalidEventType},
		{name: "type spelled only another way", header: vecHeader(), body: `{"Type":"invoice.paid"}`, wantErr: standard.ErrInvalidEventType},
		{name: "type twice", header: vecHeader(), body: `{"type":"invoice.paid","type":"invoice.voided"}`, wantErr: standard.ErrDuplicateName},
		{name: "type twice, another case", header: vecHeader(), body: `{"type":"invoice.paid","TYPE":"invoice.voided"}`, wantErr: standard.ErrDuplicateName},
		{name: "nested member twice, long s (U+017F)", header: vecHeader(), body: `{"type":"a.b","data":{"status":"failed","ſtatus":"paid"}}`, wantErr: standard.ErrDuplicateName},
	}
	a := newAdapter(t, vecNow)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Header: tt.header, Body: []byte(tt.body)}))
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
			require.LessOrEqual(t, len(standard.Name+":"+ev.Key), dedupe.MaxKeyLen, "the store must take the key")
			sum := sha256.Sum256([]byte(tt.body))
			require.Equal(t, hex.EncodeToString(sum[:]), ev.Fingerprint)
		})
	}
}

// TestParseWithoutHeadersFails: the key is the webhook-id header, so a
// delivery without it must not be given a made-up key.
func TestParseWithoutHeadersFails(t *testing.T) {
	a := newAdapter(t, vecNow)
	items, err := a.Parse(providers.Delivery{Body: readFixture(t, "invoice_paid.json")})
	require.ErrorIs(t, err, standard.ErrNoEventKey)
	require.Empty(t, items)
	// With the headers, the id is the key.
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Header: vecHeader(), Body: []byte(vecBody)}))
	require.NoError(t, err)
	require.Equal(t, vecID, ev.Key)
}

// TestFingerprintIsTheBody: one message id, another body, is another
// fingerprint (422 at the receiver), however small the change; the same
// body re-signed later is the same event.
func TestFingerprintIsTheBody(t *testing.T) {
	a := newAdapter(t, vecNow)
	body := readFixture(t, "payment_succeeded.json")
	first, err := providertest.OneEvent(a.Parse(providers.Delivery{Header: vecHeader(), Body: body}))
	require.NoError(t, err)
	later := vecHeader()
	later.Set(standard.HeaderTimestamp, "1614265390")
	same, err := providertest.OneEvent(a.Parse(providers.Delivery{Header: later, Body: body}))
	require.NoError(t, err)
	require.Equal(t, first, same)

	var v map[string]any
	require.NoError(t, json.Unmarshal(body, &v))
	reencoded, err := json.Marshal(v)
	require.NoError(t, err)
	for name, other := range map[string][]byte{
		"re-serialised":     reencoded,
		"amount changed":    []byte(strings.Replace(string(body), "185000", "18500", 1)),
		"trailing new line": append(body, '\n'),
	} {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Header: vecHeader(), Body: other}))
		require.NoError(t, err, name)
		require.Equal(t, first.Key, ev.Key, name)
		require.NotEqual(t, first.Fingerprint, ev.Fingerprint, name)
	}
}
