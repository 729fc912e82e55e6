package rawjson_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", name))
	require.NoError(t, err)
	return b
}

// TestParseAllocations pins what a parse costs: the Object and its members,
// whatever the size of the body (the values are slices of it), and a
// string only for the value returned. encoding/json's Decoder.Token took
// 125 allocations for this body.
func TestParseAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	body := readFixture(t, "stripe/charge_refunded.json")
	allocs := testing.AllocsPerRun(100, func() {
		o, err := rawjson.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := o.String("id"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := o.Get("account"); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, allocs, 3.0)
}

// TestCanonicalAllocations: a value in canonical form already (the usual
// one) is written from its text, without decoding it into interface values.
func TestCanonicalAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	raw := json.RawMessage(`{"transaction_id":"0b9e4d2a","gross_amount":"1250000.00","va_numbers":[{"va_number":"812785002530231","bank":"bca"}],"n":1.5e3,"ok":true,"x":null}`)
	var buf bytes.Buffer
	buf.Grow(4 * len(raw))
	allocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		if err := rawjson.Canonical(&buf, raw); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func TestAppendCompact(t *testing.T) {
	body := []byte("{\"a\" : { \"b\" : [ 1 ,\t2 ] ,\n\"c\" : \" x \\\" { \\\\\" } , \"d\":\"\",\"e\" : [ ] , \"f\": \"\\\\\" }")
	o, err := rawjson.Parse(body)
	require.NoError(t, err)
	for _, name := range []string{"a", "d", "e", "f"} {
		m, ok, err := o.Get(name)
		require.NoError(t, err)
		require.True(t, ok)
		var got, want bytes.Buffer
		m.AppendCompact(&got)
		require.NoError(t, json.Compact(&want, m.Value))
		require.Equal(t, want.String(), got.String(), name)
	}
}

// TestAppendCompactWhiteRuns: a run of white space of any length (the
// indentation of a line: 0 to 20 of each kind, and lines of it), before and after
// every token and at either end of the value, compacts as json.Compact
// does (skipWhite reads a word at a time).
func TestAppendCompactWhiteRuns(t *testing.T) {
	for n := range 21 {
		for _, ws := range []string{" ", "\t", "\n", "\r", "\n  "} {
			run := strings.Repeat(ws, n)
			value := []byte(run + "{" + run + `"a"` + run + ":" + run + "[" + run + "1" + run + "," + run + `"x y"` + run +
				"," + run + "true" + run + "]" + run + "," + run + `"b":null` + run + "}" + run)
			var got, want bytes.Buffer
			rawjson.Member{Value: value}.AppendCompact(&got)
			require.NoError(t, json.Compact(&want, value))
			require.Equal(t, want.String(), got.String(), "%q", value)
		}
	}
}

// TestParseDepth: nesting is limited as encoding/json limits it (10000
// levels, the body's own object included).
func TestParseDepth(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1))
	}
	var v any
	require.NoError(t, json.Unmarshal(nest(10000), &v))
	_, err := rawjson.Parse(nest(10000))
	require.NoError(t, err)
	require.Error(t, json.Unmarshal(nest(10001), &v))
	_, err = rawjson.Parse(nest(10001))
	require.ErrorIs(t, err, rawjson.ErrNotObject)
}

// TestMemberValueIsItsOwn: a member's value is a slice of the body, but
// appending to it must not write into the body.
func TestMemberValueIsItsOwn(t *testing.T) {
	body := []byte(`{"a":1,"b":2}`)
	o, err := rawjson.Parse(body)
	require.NoError(t, err)
	m, _, err := o.Get("a")
	require.NoError(t, err)
	_ = append(m.Value, 'x')
	require.Equal(t, `{"a":1,"b":2}`, string(body))
}

// TestFingerprintAllocations: a fingerprint is encoded in a reused buffer
// (HexSumOf), so it costs one allocation, its result, whatever the size of
// the members. It took two, the second as large as the body.
func TestFingerprintAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	body := readFixture(t, "paypal/payment_capture_completed.json")
	o, err := rawjson.Parse(body)
	require.NoError(t, err)
	names := []string{"id", "event_version", "create_time", "resource_type", "resource_version", "event_type", "summary", "resource"}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := o.Fingerprint(names...); err != nil {
			t.Fatal(err)
		}
	})
	require.Equal(t, 1.0, allocs)
	allocs = testing.AllocsPerRun(100, func() {
		_, err := rawjson.HexSumOf(func(buf *bytes.Buffer) error {
			buf.Write(body)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	require.Equal(t, 1.0, allocs)
}
