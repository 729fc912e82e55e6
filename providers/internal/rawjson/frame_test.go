package rawjson

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sameFraming checks that frame reads every value of o, and every value
// nested in those, as the validating tokenizer does: the same members at
// the same offsets with the same decoded names, or the same refusal.
func sameFraming(t *testing.T, o *Object) {
	t.Helper()
	for i := range o.members {
		v := o.member(&o.members[i]).Value
		got, errGot := frame(v)
		want, errWant := tokenize(v)
		if !errors.Is(errGot, errWant) || (errGot == nil) != (errWant == nil) {
			t.Fatalf("frame(%q): %v, the tokenizer: %v", v, errGot, errWant)
		}
		if errGot != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame(%q) = %+v, the tokenizer: %+v", v, got, want)
		}
		sameFraming(t, got)
	}
}

// FuzzFrame holds frame, which reads a nested object of a parsed body
// without validating it again, to the tokenizer that validates.
func FuzzFrame(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "*", "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{"a":{}}`, `{"a":{ } , "b" : [ { "c" : { "d" :1 } } ] }`, "{\"a\":{\"\\u00e9\" :\t\"x\",\"b\\\"\":[1,{\"}\":\"{\"}]}}",
		`{"a":{"x":-1.5e3,"y":true,"z":null,"w":"\\\\"}}`, "{\"a\":{\"\xff\":1,\"\\ud800\":[]}}", `{"a":"{}","b":[{}],"c":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := Parse(body)
		if err != nil {
			return
		}
		sameFraming(t, o)
	})
}

// TestFrameFixtures: frame agrees with the tokenizer on every nested value
// of every fixture.
func TestFrameFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "*", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatal("no fixtures", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		o, err := Parse(b)
		if err != nil {
			continue // Duitku's are forms
		}
		sameFraming(t, o)
	}
}
