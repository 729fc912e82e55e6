package rawjson_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

func TestParseOffsets(t *testing.T) {
	body := []byte(" {\n  \"a\" :  \"x\\u0041\" ,\"b\":100000.00,\"c\":{\"d\":[1, 2]},\"e\":null , \"f\":true}\n")
	o, err := rawjson.Parse(body)
	require.NoError(t, err)
	require.Equal(t, 5, o.Len())
	require.Equal(t, byte('{'), body[o.Open()-1])
	for name, want := range map[string]string{"a": `"x\u0041"`, "b": `100000.00`, "c": `{"d":[1, 2]}`, "e": `null`, "f": `true`} {
		m, ok, err := o.Get(name)
		require.NoError(t, err)
		require.True(t, ok, name)
		require.Equal(t, want, string(m.Value), name)
		require.Equal(t, want, string(body[m.Start:m.End]), name)
	}

	s, ok, err := o.String("a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "xA", s)

	s, ok, err = o.Scalar("b")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "100000.00", s, "numbers keep their raw text")

	_, ok, err = o.String("e")
	require.NoError(t, err)
	require.False(t, ok, "null counts as absent")
	_, ok, err = o.String("missing")
	require.NoError(t, err)
	require.False(t, ok)

	_, _, err = o.String("b")
	require.Error(t, err)
	_, _, err = o.Scalar("f")
	require.Error(t, err)
	_, _, err = o.Scalar("c")
	require.Error(t, err)

	c, ok, err := o.Object("c")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = c.Get("d")
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = o.Object("a")
	require.Error(t, err)
	_, ok, err = o.Object("e")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		body string
		want error
	}{
		{``, rawjson.ErrNotObject},
		{`   `, rawjson.ErrNotObject},
		{`null`, rawjson.ErrNotObject},
		{`[]`, rawjson.ErrNotObject},
		{`"a"`, rawjson.ErrNotObject},
		{`42`, rawjson.ErrNotObject},
		{`{`, rawjson.ErrNotObject},
		{`{"a":}`, rawjson.ErrNotObject},
		{`{"a":1,}`, rawjson.ErrNotObject},
		{`{"a" 1}`, rawjson.ErrNotObject},
		{`{"a":1}}`, rawjson.ErrNotObject},
		{`{"a":1} {}`, rawjson.ErrNotObject},
		{`{"a":1} x`, rawjson.ErrNotObject},
		{`{"a":[1,}`, rawjson.ErrNotObject},
		{`{"a":1,"a":2}`, rawjson.ErrDuplicate},
		{`{"a":1,"\u0061":2}`, rawjson.ErrDuplicate},
		{`{"a":null,"a":null}`, rawjson.ErrDuplicate},
	}
	for _, tt := range tests {
		_, err := rawjson.Parse([]byte(tt.body))
		require.ErrorIs(t, err, tt.want, tt.body)
	}
	// A nested duplicate is refused by Parse itself, at any depth.
	_, err := rawjson.Parse([]byte(`{"data":{"id":"a","id":"b"}}`))
	require.ErrorIs(t, err, rawjson.ErrDuplicate)
}

func TestFingerprint(t *testing.T) {
	fp := func(body string, names ...string) string {
		t.Helper()
		o, err := rawjson.Parse([]byte(body))
		require.NoError(t, err)
		s, err := o.Fingerprint(names...)
		require.NoError(t, err)
		require.Regexp(t, `^[0-9a-f]{64}$`, s)
		return s
	}
	base := fp(`{"a":"x","b":{"c":1,"d":[1,2]},"z":1}`)
	// Same event re-serialised: white space, member order, escapes.
	require.Equal(t, base, fp("{\n \"z\": 1, \"b\": {\"d\": [1, 2], \"c\": 1},\n \"a\": \"\\u0078\"\n}\n"))
	// Different content.
	for _, other := range []string{
		`{"a":"y","b":{"c":1,"d":[1,2]},"z":1}`,
		`{"a":"x","b":{"c":1,"d":[2,1]},"z":1}`,
		`{"a":"x","b":{"c":1.0,"d":[1,2]},"z":1}`,
		`{"a":"x","b":{"c":"1","d":[1,2]},"z":1}`,
		`{"a":"x","b":{"c":1,"d":[1,2]}}`,
		`{"a":"x","b":{"c":1,"d":[1,2]},"z":null}`,
		`{"a":"x","b":{"c":1,"d":[1,2]},"z":1,"y":1}`,
	} {
		require.NotEqual(t, base, fp(other), other)
	}
	// Named members only, in the order given; others ignored.
	require.Equal(t, fp(`{"a":"x","b":2,"c":3}`, "a", "b"), fp(`{"c":4,"b":2,"a":"x"}`, "a", "b"))
	require.NotEqual(t, fp(`{"a":"x","b":2}`, "a", "b"), fp(`{"a":"x","b":2}`, "b", "a"))
	require.NotEqual(t, fp(`{"a":"x"}`, "a", "b"), fp(`{"a":"x","b":null}`, "a", "b"))
	// Moving text between members cannot collide.
	require.NotEqual(t, fp(`{"a":"x:y","b":"z"}`, "a", "b"), fp(`{"a":"x","b":"y:z"}`, "a", "b"))
}

func TestCanonical(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, rawjson.Canonical(&buf, json.RawMessage(`{ "b" : 1e3, "a":[ "\u003c" , 12345678901234567890 ] }`)))
	require.Equal(t, `{"a":["\u003c",12345678901234567890],"b":1e3}`, buf.String())
	require.Error(t, rawjson.Canonical(&buf, json.RawMessage(`{`)))
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a" : "b\u0000", "c":[{}], "d":null} `, `{"a":1,"a":2}`, `[]`, ``, `{"a":1}x`,
		// Case-folded duplicates, at the top and deeper.
		`{"transaction_status":"deny","Transaction_Status":"settlement"}`,
		`{"transaction_status":"deny","TRANSACTION_STATUS":"settlement"}`,
		`{"transaction_status":"deny","tranſaction_ſtatus":"settlement"}`,
		`{"refund_amount":"1","refund_\u0041mount":"2"}`,
		`{"data":{"object":{"kind":"a","\u212aind":"b"}}}`,
		`{"a":[{"id":1,"ID":2}],"A":1}`,
		`{"transaction_status":"deny","transactionStatus":"settlement"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := rawjson.Parse(body)
		if err != nil {
			return
		}
		// Whatever Parse accepts is a valid JSON object whose members frame
		// their own bytes.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil || m == nil {
			t.Fatalf("Parse accepted %q, encoding/json does not", body)
		}
		// No two of its names are one name to encoding/json's struct
		// decoding (bytes.EqualFold).
		for a := range m {
			for b := range m {
				if a != b && bytes.EqualFold([]byte(a), []byte(b)) {
					t.Fatalf("Parse accepted %q, whose names %q and %q fold together", body, a, b)
				}
			}
		}
		for name := range m {
			mem, ok, err := o.Get(name)
			if err != nil || !ok || !bytes.Equal(body[mem.Start:mem.End], mem.Value) {
				t.Fatalf("member %q misframed in %q", name, body)
			}
		}
		if _, err := o.Fingerprint(); err != nil {
			t.Fatalf("Fingerprint of an accepted body failed: %v", err)
		}
	})
}

// TestMemberObject: a member as an Object or Elements returned it is read
// without validating it again; one made or changed by hand is validated and
// its names checked, as Parse does.
func TestMemberObject(t *testing.T) {
	o, err := rawjson.Parse([]byte(`{"a":{"b":1,"c":[{"d":2}]},"n":1}`))
	require.NoError(t, err)
	a, ok, err := o.Get("a")
	require.NoError(t, err)
	require.True(t, ok)
	obj, err := a.Object()
	require.NoError(t, err)
	require.Equal(t, 2, obj.Len())
	elems, ok, err := obj.Elements("c")
	require.NoError(t, err)
	require.True(t, ok)
	for _, e := range elems {
		d, err := e.Object()
		require.NoError(t, err)
		v, ok, err := d.Scalar("d")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "2", v)
	}
	n, _, err := o.Get("n")
	require.NoError(t, err)
	_, err = n.Object()
	require.ErrorIs(t, err, rawjson.ErrNotObject)

	for _, tt := range []struct {
		value string
		want  error
	}{
		{`{"b":}`, rawjson.ErrNotObject},
		{`{"b":1,"B":2}`, rawjson.ErrDuplicate},
		{`{"b":{"c":1,"c":2}}`, rawjson.ErrDuplicate},
	} {
		_, err := rawjson.Member{Value: []byte(tt.value)}.Object()
		require.ErrorIs(t, err, tt.want, "made by hand: %s", tt.value)
		changed := a
		changed.Value = []byte(tt.value)
		_, err = changed.Object()
		require.ErrorIs(t, err, tt.want, "changed by hand: %s", tt.value)
	}
}
