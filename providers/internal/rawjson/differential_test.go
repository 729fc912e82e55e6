package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseDifferential holds Parse to the encoding/json decoder it
// replaced (parseReference) and to json.Unmarshal: the same accept or
// reject decision with the same error, the same members framed at the same
// offsets, and, for an accepted body, the values encoding/json reads.
func FuzzParseDifferential(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "*", "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{}`, ` {"a" : "b\u0000", "c":[{}], "d":null} `, `{"a":1,"a":2}`, `{"a":1,"A":2}`,
		`[]`, ``, `{"a":1}x`, `{"a":1}{}`, "{\"a\xff\":1}", `{"a\ud800":"\udc00x"}`, `{"\u00e9":"\/"}`,
		`{"a":1,"a":2,}`, `{"a":[1,{"b":2,"B":3}]}`, `{"a":-0.0e+5,"b":1E-2,"c":"\t"}`, "{\"a\":\"\t\"}",
		"\ufeff{}", `{"a":01}`, `{"a":.5}`, `{"a":tru}`, `{"a" :` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := Parse(body)
		want, open, wantErr := parseReference(body)
		switch {
		case err == nil && wantErr == nil:
		case errors.Is(err, ErrNotObject) && errors.Is(wantErr, ErrDuplicate) && !json.Valid(body):
			// The old decoder refused an exact duplicate name before it
			// reached a syntax error further on; Parse validates first.
			return
		case err != nil && errors.Is(err, wantErr):
			return
		default:
			t.Fatalf("Parse(%q) = %v, encoding/json's decoder gave %v", body, err, wantErr)
		}
		if o.Len() != len(want) || o.Open() != open {
			t.Fatalf("Parse(%q): %d members opening at %d, want %d at %d", body, o.Len(), o.Open(), len(want), open)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil || len(m) != len(want) {
			t.Fatalf("Parse accepted %q; json.Unmarshal: %v, %d members", body, err, len(m))
		}
		for name, w := range want {
			got, ok, err := o.Get(name)
			if err != nil || !ok || got.Start != w.Start || got.End != w.End || !bytes.Equal(got.Value, w.Value) ||
				!bytes.Equal(got.Value, m[name]) {
				t.Fatalf("Parse(%q): member %q is %q at [%d,%d], want %q at [%d,%d]",
					body, name, got.Value, got.Start, got.End, w.Value, w.Start, w.End)
			}
			var compact, wantCompact bytes.Buffer
			got.AppendCompact(&compact)
			if err := json.Compact(&wantCompact, w.Value); err != nil || compact.String() != wantCompact.String() {
				t.Fatalf("AppendCompact(%q) = %q, json.Compact gives %q (%v)", w.Value, compact.String(), wantCompact.String(), err)
			}
			if w.Value[0] == '"' {
				var ws string
				_ = json.Unmarshal(w.Value, &ws)
				if s, ok, err := o.String(name); err != nil || !ok || s != ws {
					t.Fatalf("Parse(%q).String(%q) = %q, %v; want %q", body, name, s, err, ws)
				}
			}
		}
		fp, err := o.Fingerprint()
		if err != nil {
			t.Fatalf("Fingerprint of an accepted body failed: %v", err)
		}
		if wfp := fingerprintReference(t, want); fp != wfp {
			t.Fatalf("Parse(%q).Fingerprint() = %s, encoding/json gives %s", body, fp, wfp)
		}
	})
}

// FuzzCanonical holds Canonical, which writes the usual value straight from
// its text, to the decode-and-Marshal encoding it replaced byte for byte:
// stored fingerprints depend on it.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`1`, ` 1 `, `1 x`, `-0.50e+3`, `"a"`, `"\u0078<>&\/\t"`, "\"\u2028\u2029\x7f\"", "\"a\xff\"",
		`"\ud800"`, `{"b":1,"a":[true,false,null,{"d":"e","c":{}}],"":[]}`, `{"a":1,"a":2}`, `{"\u0061":1,"b":2}`,
		`{"<":1,"é":2,"e":3}`, "{ \"a\" :\n[ 1 , 2 ] , \"b\":{ } }", `[]`, `[ ]`, `{}`, `{`, `[1,]`, `nul`, ``,
		`{"data":{"object":{"id":"ch_1","amount":1000,"metadata":{"order_id":"WH-1"}}}}`,
		// Names that share their first eight bytes, or start one another.
		`{"transaction_b":1,"transaction_a":2,"transaction":3,"trans":4,"transaction_ab":5,"transactio":6,"":7}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want bytes.Buffer
		errGot := Canonical(&got, raw)
		errWant := canonicalReference(&want, raw)
		if (errGot == nil) != (errWant == nil) || got.String() != want.String() {
			t.Fatalf("Canonical(%q) = %q, %v; encoding/json gives %q, %v", raw, got.String(), errGot, want.String(), errWant)
		}
	})
}

// TestDeepValuesFallBack: a value nested deeper than maxFastDepth, whose
// objects are out of order, is left to canonicalSlow (appendObject would
// move its nested pairs once per level), and comes out the same as one
// canonicalized all the way by either path.
func TestDeepValuesFallBack(t *testing.T) {
	nested := func(depth int) []byte {
		var b bytes.Buffer
		for range depth {
			b.WriteString(`{"b":`)
		}
		b.WriteString(`[1,{"z":2,"y":3}]`)
		for range depth {
			b.WriteString(`,"a":1}`)
		}
		return b.Bytes()
	}
	for _, tt := range []struct {
		depth int
		fast  bool
	}{
		{1, true},
		{maxFastDepth - 2, true}, // the objects and the array and object inside
		{maxFastDepth - 1, false},
		{3000, false},
	} {
		raw := nested(tt.depth)
		_, ok := appendCanonical(nil, raw)
		require.Equal(t, tt.fast, ok, "depth %d", tt.depth)
		var got, want bytes.Buffer
		require.NoError(t, canonical(&got, raw))
		require.NoError(t, canonicalSlow(&want, raw))
		require.Equal(t, want.String(), got.String(), "depth %d", tt.depth)
	}
}
