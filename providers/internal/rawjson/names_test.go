package rawjson_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

func TestParseRefusesNameVariants(t *testing.T) {
	tests := []struct{ name, body string }{
		{"upper-case initials", `{"transaction_status":"deny","Transaction_Status":"settlement"}`},
		{"all caps", `{"transaction_status":"deny","TRANSACTION_STATUS":"settlement"}`},
		{"long s (U+017F)", `{"transaction_status":"deny","tranſaction_ſtatus":"settlement"}`},
		{"long s escaped", `{"transaction_status":"deny","tran\u017faction_status":"settlement"}`},
		{"Kelvin sign (U+212A)", `{"refund_key":"a","refund_` + "\u212a" + `ey":"b"}`},
		{"Kelvin sign escaped", `{"refund_key":"a","refund_\u212Aey":"b"}`},
		{"upper-case escaped", `{"id":"a","\u0049\u0044":"b"}`},
		{"escaped underscore", `{"refund_amount":"1","refund\u005fAmount":"2"}`},
		{"dotless i (U+0131), as upper-casing decoders compare", `{"id":"a","ıd":"b"}`},
		{"dotted I (U+0130), as lower-casing decoders compare", `{"id":"a","İd":"b"}`},
		{"Greek final sigma", `{"σ":1,"ς":2}`},
		{"Greek capital sigma", `{"ς":1,"Σ":2}`},
		{"invalid UTF-8 reads as U+FFFD", "{\"a\xff\":1,\"a\xfe\":2}"},
		{"invalid UTF-8 and U+FFFD", "{\"a\xff\":1,\"a\\ufffd\":2}"},
		{"lone surrogates read as U+FFFD", `{"a\ud800":1,"a\udc00":2}`},
		{"surrogate pair and its rune", `{"\ud83d\ude00":1,"` + "\U0001F600" + `":2}`},
		{"three members, variants first and last", `{"Status":1,"amount":2,"status":3}`},
		{"many members", `{` + manyMembers(200) + `,"M150":0}`},
		{"nested object", `{"data":{"object":{"status":"failed","ſtatus":"succeeded"}}}`},
		{"object in an array", `{"lines":[{"a":1},{"kind":"a","KIND":"b"}]}`},
		{"deep", strings.Repeat(`{"a":`, 100) + `{"x":1,"X":2}` + strings.Repeat(`}`, 100)},
		{"white space before the colon", "{\"id\" :1, \"ID\"\n:\t2}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rawjson.Parse([]byte(tt.body))
			require.ErrorIs(t, err, rawjson.ErrDuplicate)
		})
	}
}

// manyMembers returns n members "m0":0,"m1":0,... without braces.
func manyMembers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"m` + strconv.Itoa(i) + `":0`
	}
	return strings.Join(parts, ",")
}

func TestParseKeepsDistinctNames(t *testing.T) {
	for _, body := range []string{
		`{"id":"a","ids":"b","i_e":{"id":1},"d":[{"id":2},{"id":3}]}`,
		`{"status":"a","status_code":"b","statuses":"c"}`,
		// Same name in different objects is not a duplicate.
		`{"id":"a","data":{"id":"b","object":{"id":"c"}},"list":[{"id":1},{"id":2}]}`,
		// Strings that only look like names, and braces inside strings.
		`{"a":"ID","b":["a","A"],"c":"{\"x\":1,\"X\":2}","d":"\\","e":"\\\""}`,
		`{"ß":1,"ss":2}`, // full case folding is not what the decoders do
		// "_" and "-" count: merchant metadata may hold both spellings.
		`{"transaction_status":"deny","transactionStatus":"settlement"}`,
		`{"metadata":{"order_id":"1","order-id":"2","orderid":"3"}}`,
		`{"a":1,"b":2,"` + "\u00e5" + `":3,"` + "\u212b" + `x":4}`,
		`{` + manyMembers(200) + `}`,
	} {
		_, err := rawjson.Parse([]byte(body))
		require.NoError(t, err, body)
	}
}

// TestGetRefusesVariants: a looked-up name that the body spells only
// another way is an error, not "absent": a folding decoder reads it.
func TestGetRefusesVariants(t *testing.T) {
	o, err := rawjson.Parse([]byte(`{"Refund_Amount":"9","tranſaction_ſtatus":"settlement","FRAUD_STATUS":"accept","data":{"ID":"x"},"id":"a"}`))
	require.NoError(t, err)
	for _, name := range []string{"refund_amount", "transaction_status", "fraud_status", "DATA"} {
		_, _, err := o.Get(name)
		require.ErrorIs(t, err, rawjson.ErrVariant, name)
		_, _, err = o.String(name)
		require.ErrorIs(t, err, rawjson.ErrVariant, name)
		_, _, err = o.Scalar(name)
		require.ErrorIs(t, err, rawjson.ErrVariant, name)
		_, _, err = o.Object(name)
		require.ErrorIs(t, err, rawjson.ErrVariant, name)
		_, _, err = o.Elements(name)
		require.ErrorIs(t, err, rawjson.ErrVariant, name)
		_, err = o.Fingerprint("id", name)
		require.ErrorIs(t, err, rawjson.ErrVariant, name)
		require.ErrorIs(t, o.AppendMembers(&bytes.Buffer{}, []string{name}), rawjson.ErrVariant, name)
		require.NotContains(t, err.Error(), "settlement", "errors never quote the body's values")
	}
	data, ok, err := o.Object("data")
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = data.String("id")
	require.ErrorIs(t, err, rawjson.ErrVariant)

	// Exact names and names that are really absent are as before.
	s, ok, err := o.String("id")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "a", s)
	for _, name := range []string{"refund_key", "status", "i", "ids"} {
		_, ok, err := o.Get(name)
		require.NoError(t, err, name)
		require.False(t, ok, name)
	}
}

// TestGetVariantsFirstByte: a variant that differs from the name looked up
// in its first character, in case, in a folding rune or in an escape, is
// found as any other.
func TestGetVariantsFirstByte(t *testing.T) {
	o, err := rawjson.Parse([]byte(`{"Status":1,"ſcope":2,"\u004bind":3,"` + "\u212a" + `ey":4,"\u0061mount":5,"ıd":6,"other":7}`))
	require.NoError(t, err)
	for _, name := range []string{"status", "STATUS", "scope", "kind", "KIND", "key", "Amount", "id", "ID", "Other"} {
		_, ok, err := o.Get(name)
		require.ErrorIs(t, err, rawjson.ErrVariant, name)
		require.False(t, ok, name)
	}
	for _, name := range []string{"xtatus", "tatus", "s", "mount", "other_"} {
		_, ok, err := o.Get(name)
		require.NoError(t, err, name)
		require.False(t, ok, name)
	}
}

// BenchmarkCheckNames measures the name check on its own: Parse of a body
// whose members are all plain lowercase names, with and without nesting.
// Run: go test -bench CheckNames -benchmem ./providers/internal/rawjson/
func BenchmarkCheckNames(b *testing.B) {
	body := []byte(`{"transaction_time":"2026-03-14 13:40:02","transaction_status":"capture","transaction_id":"0b9e4d2a",` +
		`"status_message":"midtrans payment notification","status_code":"201","payment_type":"credit_card","order_id":"WH-ORDER-2042",` +
		`"merchant_id":"G812345670","gross_amount":"1250000.00","fraud_status":"challenge","currency":"IDR",` +
		`"va_numbers":[{"bank":"bca","va_number":"812785002530231"}],"payment_amounts":[]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := rawjson.CheckNames(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCompareASCIIAgreesWithCompareRaw: on plain ASCII names the fast
// comparison finds two names equal exactly when the general one does, for
// every pair of short names over an alphabet with both cases, digits and
// the characters foldKey must not merge.
func TestCompareASCIIAgreesWithCompareRaw(t *testing.T) {
	alphabet := []byte("aAzZ09_-[{@`~ ")
	var names [][]byte
	for _, a := range alphabet {
		names = append(names, []byte{a})
		for _, b := range alphabet {
			names = append(names, []byte{a, b})
		}
	}
	for _, a := range names {
		for _, b := range names {
			require.Equal(t, rawjson.CompareRaw(a, b) == 0, rawjson.CompareASCII(a, b) == 0, "%q %q", a, b)
			require.Equal(t, rawjson.CompareASCII(a, b) < 0, rawjson.CompareASCII(b, a) > 0, "%q %q: antisymmetric", a, b)
		}
	}
	// foldKey's own ASCII answer, byte by byte.
	for c := range 128 {
		require.Equal(t, rawjson.FoldKey(rune(c)), rune(rawjson.UpperASCII(byte(c))), "%q", c)
	}
}
