package midtrans_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
)

// The vectors of docs/providers.md ("Midtrans"), recomputed with Python
// hashlib and openssl.
const (
	// docs.midtrans.com/reference/handle-notifications PHP sample inputs.
	docsKey   = "askvnoibnosifnboseofinbofinfgbiufglnbfg"
	docsSig   = "edc076b21793ebe3e17926350f5b8ae67d902fe657b3d0aa31b932d5c127e2375d308a2bc94f3265ac2d80a1f181a79b997ac178a236fcff35af263fc4d4c231"
	docsSig0  = "5f363520e86c10c2ea14074cd09dc1d67299633558abe291ded95a16908f9ec5071e982c289c3333bcbcfe62dd8e78ae4c3d3bd92191707ba2e91f7169d8411a" // gross_amount "100000"
	docsSig10 = "5179e5b61255ca264aee90d60c621218d2f2a99563924e2119a9c99206cd22c7f37cd1802880530a884a956215488ffc46fa66f8f8f15aa27ec57e3679a05c1e" // gross_amount "100000.0"

	// The server key of the official-org fixtures (veritrans/midtrans-agent-skills),
	// which also signs this repository's fixtures/midtrans.
	testKey = "SB-Mid-server-test"
)

// officialVectors are the official-org fixture signatures under testKey.
var officialVectors = []struct{ orderID, statusCode, grossAmount, sig string }{
	{"ORDER-sandbox-0001", "200", "150000.00", "d65b4adf15335095fe1bfafe24964d48009dcc2989393e13570b0c9852ea60df0040b1a9646b9c9ef9433317f77acc8e387c59998dc20f5bd93fff93d23672e4"},
	{"ORDER-sandbox-0002", "201", "75000.00", "db70270f6c27da2b564d4fffd9df3eeae578a7afba22bf5e6071711c7914d7a3d22ccaa533e864cf53742ca73c9e63016b0cbc1f97ee253a77b24b7a410d876a"},
	{"ORDER-sandbox-0003", "202", "50000.00", "a51d1bd2aa8b1dca9228f3827cd641b6dadf52ebb9ed40fb45db6a06dbb33de7cde8e80caa93dfb5e6beeaaf44f698dc7f6f56edd46556eddaa2a774ff7692c6"},
	{"ORDER-partial-refund-0001", "200", "150000.00", "d115a0f55a40f2c60465006118c1e48f52c3baf5a953f8443221d84dea9a9ebd7ba20f7c76d2320dfcdd31c3de41a047f6b43a4075bea5f734dd8c5231268906"},
}

// note builds a notification body. Each value is raw JSON text, so a test
// can send a number, null, or a string with escapes; "" leaves the field out.
func note(orderID, statusCode, grossAmount, sig string) []byte {
	var b strings.Builder
	b.WriteString(`{"transaction_time":"2026-03-14 10:00:00","transaction_status":"settlement",` +
		`"transaction_id":"3b6f0a52-1d2e-4c8b-9f7a-5e4d3c2b1a00","status_message":"midtrans payment notification"`)
	for _, f := range []struct{ name, raw string }{
		{"status_code", statusCode}, {"signature_key", sig}, {"order_id", orderID}, {"gross_amount", grossAmount},
	} {
		if f.raw != "" {
			fmt.Fprintf(&b, `,%q:%s`, f.name, f.raw)
		}
	}
	b.WriteString(`,"payment_type":"gopay","fraud_status":"accept","currency":"IDR"}`)
	return []byte(b.String())
}

func q(s string) string { return fmt.Sprintf("%q", s) }

func newAdapter(t testing.TB, key string, opts ...midtrans.Option) *midtrans.Adapter {
	t.Helper()
	a, err := midtrans.New(key, opts...)
	require.NoError(t, err)
	return a
}

func TestSignatureKeyVectors(t *testing.T) {
	require.Equal(t, docsSig, midtrans.SignatureKey("1111", "200", "100000.00", docsKey))
	require.Equal(t, docsSig0, midtrans.SignatureKey("1111", "200", "100000", docsKey))
	require.Equal(t, docsSig10, midtrans.SignatureKey("1111", "200", "100000.0", docsKey))
	for _, v := range officialVectors {
		require.Equal(t, v.sig, midtrans.SignatureKey(v.orderID, v.statusCode, v.grossAmount, testKey), v.orderID)
	}
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name    string
		key     string // default docsKey
		body    []byte
		wantErr error
	}{
		// Vectors.
		{name: "docs vector", body: note(q("1111"), q("200"), q("100000.00"), q(docsSig))},
		{name: "docs vector, gross_amount 100000 with its own signature", body: note(q("1111"), q("200"), q("100000"), q(docsSig0))},
		{name: "docs vector, gross_amount 100000.0 with its own signature", body: note(q("1111"), q("200"), q("100000.0"), q(docsSig10))},
		{name: "gross_amount reformatted to 100000", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000"), q(docsSig))},
		{name: "gross_amount reformatted to 100000.0", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.0"), q(docsSig))},
		{name: "gross_amount reformatted to 100000.000", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.000"), q(docsSig))},
		{name: "gross_amount as a JSON number keeps its raw text", body: note(q("1111"), q("200"), "100000.00", q(docsSig))},
		{name: "gross_amount as a JSON number, other text", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), "100000.0", q(docsSig))},
		{name: "gross_amount in exponent form", wantErr: midtrans.ErrInvalidSignedField,
			body: note(q("1111"), q("200"), "1e5", q(docsSig))},
		{name: "status_code as a JSON number", body: note(q("1111"), "200", q("100000.00"), q(docsSig))},
		{name: "order_id with a JSON escape is hashed decoded", body: note(`"\u0031111"`, q("200"), q("100000.00"), q(docsSig))},
		{name: "signature in upper case", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.00"), q(strings.ToUpper(docsSig)))},

		// Tampering.
		{name: "order_id changed", wantErr: midtrans.ErrNoValidSignature, body: note(q("1112"), q("200"), q("100000.00"), q(docsSig))},
		{name: "status_code changed", wantErr: midtrans.ErrNoValidSignature, body: note(q("1111"), q("201"), q("100000.00"), q(docsSig))},
		{name: "gross_amount changed", wantErr: midtrans.ErrNoValidSignature, body: note(q("1111"), q("200"), q("900000.00"), q(docsSig))},
		{name: "signature one digit changed", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.00"), q(docsSig[:127]+"0"))},
		{name: "signature one digit short", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.00"), q(docsSig[:127]))},
		{name: "signature one digit long", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.00"), q(docsSig+"0"))},
		{name: "signature not hex", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.00"), q(strings.Repeat("g", 128)))},
		{name: "wrong server key", key: testKey, wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.00"), q(docsSig))},
		{name: "server key with a suffix", key: docsKey + "x", wantErr: midtrans.ErrNoValidSignature,
			body: note(q("1111"), q("200"), q("100000.00"), q(docsSig))},
		// Moving digits between the separator-less fields keeps the hashed
		// text, so only the fields' shapes can refuse it.
		{name: "digits moved from status_code into order_id", wantErr: midtrans.ErrInvalidSignedField,
			body: note(q("11112"), q("001"), q("00000.00"), q(docsSig))},
		{name: "digits moved from order_id into status_code", wantErr: midtrans.ErrInvalidSignedField,
			body: note(q("111"), q("120"), q("0100000.00"), q(docsSig))},

		// Missing or malformed signature.
		{name: "no signature_key", wantErr: midtrans.ErrNotSigned, body: note(q("1111"), q("200"), q("100000.00"), "")},
		{name: "signature_key null", wantErr: midtrans.ErrNotSigned, body: note(q("1111"), q("200"), q("100000.00"), "null")},
		{name: "signature_key empty", wantErr: midtrans.ErrNotSigned, body: note(q("1111"), q("200"), q("100000.00"), `""`)},
		{name: "signature_key a number", wantErr: midtrans.ErrNotSigned, body: note(q("1111"), q("200"), q("100000.00"), "12")},
		{name: "signature_key an array", wantErr: midtrans.ErrNotSigned, body: note(q("1111"), q("200"), q("100000.00"), `["`+docsSig+`"]`)},

		// Missing or malformed signed fields.
		{name: "no order_id", wantErr: midtrans.ErrInvalidSignedField, body: note("", q("200"), q("100000.00"), q(docsSig))},
		{name: "empty order_id", wantErr: midtrans.ErrInvalidSignedField, body: note(q(""), q("200"), q("100000.00"), q(docsSig))},
		{name: "order_id an object", wantErr: midtrans.ErrInvalidSignedField, body: note(`{"id":"1111"}`, q("200"), q("100000.00"), q(docsSig))},
		{name: "order_id too long", wantErr: midtrans.ErrInvalidSignedField,
			body: note(q(strings.Repeat("1", midtrans.MaxOrderIDBytes+1)), q("200"), q("100000.00"), q(docsSig))},
		{name: "no status_code", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), "", q("100000.00"), q(docsSig))},
		{name: "status_code of two digits", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("20"), q("100000.00"), q(docsSig))},
		{name: "status_code with a space", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("200 "), q("100000.00"), q(docsSig))},
		{name: "status_code true", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), "true", q("100000.00"), q(docsSig))},
		{name: "no gross_amount", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("200"), "", q(docsSig))},
		{name: "gross_amount null", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("200"), "null", q(docsSig))},
		{name: "gross_amount negative", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("200"), q("-100000.00"), q(docsSig))},
		{name: "gross_amount with a comma", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("200"), q("100,000.00"), q(docsSig))},
		{name: "gross_amount with a leading zero", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("200"), q("0100000.00"), q(docsSig))},
		{name: "gross_amount with a trailing dot", wantErr: midtrans.ErrInvalidSignedField, body: note(q("1111"), q("200"), q("100000."), q(docsSig))},

		// Bodies that carry no readable signature.
		{name: "empty body", wantErr: midtrans.ErrUnreadableBody, body: nil},
		{name: "form-encoded body", wantErr: midtrans.ErrUnreadableBody, body: []byte("order_id=1111&status_code=200")},
		{name: "JSON array", wantErr: midtrans.ErrUnreadableBody, body: []byte(`[{"order_id":"1111"}]`)},
		{name: "trailing garbage", wantErr: midtrans.ErrUnreadableBody,
			body: append(note(q("1111"), q("200"), q("100000.00"), q(docsSig)), " {}"...)},
		{name: "signature_key twice", wantErr: midtrans.ErrUnreadableBody,
			body: []byte(`{"order_id":"1111","status_code":"200","gross_amount":"100000.00","signature_key":"` + docsSig + `","signature_key":"x"}`)},
		{name: "transaction_status twice (readers could disagree on it)", wantErr: midtrans.ErrUnreadableBody,
			body: []byte(`{"transaction_status":"pending","order_id":"1111","status_code":"200","gross_amount":"100000.00","signature_key":"` + docsSig + `","transaction_status":"settlement"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := tt.key
			if key == "" {
				key = docsKey
			}
			err := newAdapter(t, key).Verify(context.Background(), providers.Delivery{Body: tt.body})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			require.NotErrorIs(t, err, providers.ErrMalformed)
			for _, secret := range []string{docsKey, testKey, docsSig, docsSig[:32]} {
				require.NotContains(t, err.Error(), secret, "errors must not quote keys or signatures")
			}
		})
	}
}

func TestVerifyOfficialVectors(t *testing.T) {
	a := newAdapter(t, testKey)
	for _, v := range officialVectors {
		t.Run(v.orderID, func(t *testing.T) {
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: note(q(v.orderID), q(v.statusCode), q(v.grossAmount), q(v.sig))}))
			// Midtrans's signature does not cover the status: the same body
			// with transaction_status edited still verifies. Confirm exists
			// for this (see confirm_test.go).
			edited := strings.Replace(string(note(q(v.orderID), q(v.statusCode), q(v.grossAmount), q(v.sig))),
				`"settlement"`, `"refund"`, 1)
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: []byte(edited)}))
			// A reformatted amount is refused.
			short := strings.TrimSuffix(v.grossAmount, ".00")
			require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: note(q(v.orderID), q(v.statusCode), q(short), q(v.sig))}), midtrans.ErrNoValidSignature)
			require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: note(q(v.orderID), q(v.statusCode), short, q(v.sig))}), midtrans.ErrNoValidSignature)
		})
	}
}

func TestVerifyZeroAdapterRejects(t *testing.T) {
	var a midtrans.Adapter
	for _, key := range []string{"", docsKey} {
		err := a.Verify(context.Background(), providers.Delivery{Body: note(q("1111"), q("200"), q("100000.00"), q(midtrans.SignatureKey("1111", "200", "100000.00", key)))})
		require.ErrorIs(t, err, providers.ErrUnauthorized)
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	groups := []struct {
		base error
		errs []error
	}{
		{providers.ErrUnauthorized, []error{midtrans.ErrUnreadableBody, midtrans.ErrNotSigned, midtrans.ErrInvalidSignedField, midtrans.ErrNoValidSignature}},
		{providers.ErrMalformed, []error{midtrans.ErrNotJSON, midtrans.ErrNoEventKey, midtrans.ErrInvalidField}},
		{providers.ErrMismatch, []error{midtrans.ErrStatusMismatch, midtrans.ErrUnknownTransaction}},
		{providers.ErrUnavailable, []error{midtrans.ErrStatusUnavailable}},
	}
	var all []error
	for _, g := range groups {
		for _, e := range g.errs {
			require.ErrorIs(t, e, g.base)
			all = append(all, e)
		}
	}
	for i, a := range all {
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		opts    []midtrans.Option
		wantErr bool
	}{
		{"sandbox key", testKey, nil, false},
		{"with status check, default API", testKey, []midtrans.Option{midtrans.WithStatusCheck("")}, false},
		{"with status check, sandbox API", testKey, []midtrans.Option{midtrans.WithStatusCheck("https://api.sandbox.midtrans.com/")}, false},
		{"with a timeout", testKey, []midtrans.Option{midtrans.WithStatusCheck(""), midtrans.WithStatusTimeout(time.Second)}, false},
		{"empty key", "", nil, true},
		{"key with a trailing newline", testKey + "\n", nil, true},
		{"key with a leading space", " " + testKey, nil, true},
		{"zero timeout", testKey, []midtrans.Option{midtrans.WithStatusTimeout(0)}, true},
		{"relative API URL", testKey, []midtrans.Option{midtrans.WithStatusCheck("api.midtrans.com")}, true},
		{"ftp API URL", testKey, []midtrans.Option{midtrans.WithStatusCheck("ftp://api.midtrans.com")}, true},
		{"API URL with a query", testKey, []midtrans.Option{midtrans.WithStatusCheck("https://api.midtrans.com/?x=1")}, true},
		{"API URL with credentials", testKey, []midtrans.Option{midtrans.WithStatusCheck("https://u:hunter2@api.midtrans.com")}, true},
		// The server key goes in every status call's Authorization header.
		{"plain http API URL to a remote host", testKey, []midtrans.Option{midtrans.WithStatusCheck("http://api.midtrans.com")}, true},
		{"plain http API URL to a loopback host", testKey, []midtrans.Option{midtrans.WithStatusCheck("http://127.0.0.1:8089")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := midtrans.New(tt.key, tt.opts...)
			if !tt.wantErr {
				require.NoError(t, err)
				require.Equal(t, "midtrans", a.Name())
				return
			}
			require.Error(t, err)
			require.Nil(t, a)
			require.NotContains(t, err.Error(), testKey)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	a := newAdapter(b, docsKey)
	body := note(q("1111"), q("200"), q("100000.00"), q(docsSig))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := a.Verify(context.Background(), providers.Delivery{Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestShiftedFieldsHashAlike shows why Verify checks the fields' shapes: the
// shifted bodies of TestVerify hash to the very signature of the original.
func TestShiftedFieldsHashAlike(t *testing.T) {
	require.Equal(t, docsSig, midtrans.SignatureKey("11112", "001", "00000.00", docsKey))
	require.Equal(t, docsSig, midtrans.SignatureKey("111", "120", "0100000.00", docsKey))
}

// TestShapedFieldsStillShift: the shapes Verify checks do not give the
// signed text one reading. Digits move from gross_amount into order_id with
// every field well formed, so Verify accepts both; only the status check
// (on by default), which compares order_id and gross_amount with what
// Midtrans reports, tells them apart (TestConfirm, "another gross_amount").
func TestShapedFieldsStillShift(t *testing.T) {
	a := newAdapter(t, docsKey)
	sig := midtrans.SignatureKey("A", "200", "1200200.00", docsKey)
	require.Equal(t, sig, midtrans.SignatureKey("A2001", "200", "200.00", docsKey))
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: note(q("A"), q("200"), q("1200200.00"), q(sig))}))
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: note(q("A2001"), q("200"), q("200.00"), q(sig))}))
}
