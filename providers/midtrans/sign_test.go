package midtrans_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/midtrans"
)

// requireOnlySignatureChanged checks that out is in with only the value of
// signature_key replaced, and returns that value.
func requireOnlySignatureChanged(t *testing.T, in, out []byte) string {
	t.Helper()
	o, err := rawjson.Parse(in)
	require.NoError(t, err)
	m, ok, err := o.Get(midtrans.SignatureField)
	require.NoError(t, err)
	require.True(t, ok)
	tail := len(in) - m.End
	require.Equal(t, in[:m.Start], out[:m.Start], "bytes before signature_key")
	require.Equal(t, in[m.End:], out[len(out)-tail:], "bytes after signature_key")
	return string(out[m.Start : len(out)-tail])
}

func TestSignFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	var signer providers.Provider = newAdapter(t, testKey)
	other := newAdapter(t, "SB-Mid-server-other")
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			body := readFixture(t, filepath.Base(path))
			// The fixtures are already signed with testKey: re-signing
			// them changes nothing.
			signed, err := providers.Sign(signer, bytes.Clone(body))
			out, h := signed.Body, signed.Header
			require.NoError(t, err)
			require.Equal(t, body, out)
			require.Empty(t, h)

			// Under another key only signature_key's value changes.
			signed, err = other.Sign(bytes.Clone(body))
			out = signed.Body
			require.NoError(t, err)
			value := requireOnlySignatureChanged(t, body, out)
			require.Regexp(t, `^"[0-9a-f]{128}"$`, value)
			require.NoError(t, other.Verify(context.Background(), providers.Delivery{Body: out}))
			require.ErrorIs(t, newAdapter(t, testKey).Verify(context.Background(), providers.Delivery{Body: out}), midtrans.ErrNoValidSignature)
		})
	}
}

func TestSign(t *testing.T) {
	a := newAdapter(t, docsKey)
	want := `"` + docsSig + `"`
	tests := []struct {
		name string
		in   string
		out  string
	}{
		{"replaces a wrong signature",
			`{"order_id":"1111", "status_code":"200","gross_amount":"100000.00","signature_key":"x"}`,
			`{"order_id":"1111", "status_code":"200","gross_amount":"100000.00","signature_key":` + want + `}`},
		{"replaces a null signature, keeping white space around it",
			"{\n  \"signature_key\" :  null ,\n  \"order_id\": \"1111\",\"status_code\":\"200\",\"gross_amount\":\"100000.00\"\n}\n",
			"{\n  \"signature_key\" :  " + want + " ,\n  \"order_id\": \"1111\",\"status_code\":\"200\",\"gross_amount\":\"100000.00\"\n}\n"},
		{"replaces a non-string signature",
			`{"signature_key":{"a":[1]},"order_id":"1111","status_code":"200","gross_amount":"100000.00"}`,
			`{"signature_key":` + want + `,"order_id":"1111","status_code":"200","gross_amount":"100000.00"}`},
		{"adds a missing signature as the first member",
			` {"order_id":"1111","status_code":"200","gross_amount":"100000.00"}`,
			` {"signature_key":` + want + `,"order_id":"1111","status_code":"200","gross_amount":"100000.00"}`},
		{"signs a gross_amount number by its raw text",
			`{"order_id":"1111","status_code":"200","gross_amount":100000.00}`,
			`{"signature_key":` + want + `,"order_id":"1111","status_code":"200","gross_amount":100000.00}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signed, err := a.Sign([]byte(tt.in))
			out, h := signed.Body, signed.Header
			require.NoError(t, err)
			require.Equal(t, tt.out, string(out))
			require.Equal(t, http.Header{}, h)
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: out}))
			// Signing is idempotent.
			signed, err = a.Sign(out)
			again := signed.Body
			require.NoError(t, err)
			require.Equal(t, out, again)
		})
	}
}

func TestSignRefuses(t *testing.T) {
	a := newAdapter(t, docsKey)
	for _, body := range []string{
		``, `[]`, `null`, `{}`,
		`{"order_id":"1111","status_code":"200"}`,
		`{"order_id":"1111","status_code":"2000","gross_amount":"1.00"}`,
		`{"order_id":"1111","status_code":"200","gross_amount":"1.00","signature_key":"a","signature_key":"b"}`,
	} {
		signed, err := a.Sign([]byte(body))
		out := signed.Body
		require.Error(t, err, body)
		require.Nil(t, out)
		require.NotContains(t, err.Error(), docsKey)
	}
	var zero midtrans.Adapter
	_, err := zero.Sign(note(q("1111"), q("200"), q("100000.00"), ""))
	require.Error(t, err)
}
