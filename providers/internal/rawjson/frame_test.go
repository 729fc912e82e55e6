package rawjson

import (
	"bytes"
	"encoding/json"
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
// without validating it again, to the tokenizer that validates, and
// Elements, which reads an array member so, to encoding/json.
func FuzzFrame(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "*", "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{"a":{}}`, `{"a":{ } , "b" : [ { "c" : { "d" :1 } } ] }`, "{\"a\":{\"\\u00e9\" :\t\"x\",\"b\\\"\":[1,{\"}\":\"{\"}]}}",
		`{"a":{"x":-1.5e3,"y":true,"z":null,"w":"\\\\"}}`, "{\"a\":{\"\xff\":1,\"\\ud800\":[]}}", `{"a":"{}","b":[{}],"c":1}`,
		`{"a":[],"b":[ ],"c":[ 1 , "]" , [ [ ] ] , {"x":[2]} ],"d":null,"e":"[1]","f":{"g":[true,false]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := Parse(body)
		if err != nil {
			return
		}
		sameFraming(t, o)
		sameElements(t, o)
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
		sameElements(t, o)
	}
}

// sameElements checks that Elements reads every array member of o, and of
// the objects nested in it, as encoding/json does, at the right offsets.
func sameElements(t *testing.T, o *Object) {
	t.Helper()
	for i := range o.members {
		e := &o.members[i]
		m := o.member(e)
		name := o.name(e)
		seq, ok, err := o.Elements(name)
		var elems []Member
		if seq != nil {
			for k, el := range seq {
				if k != len(elems) {
					t.Fatalf("Elements(%q): element %d indexed %d", name, len(elems), k)
				}
				elems = append(elems, el)
			}
			for range seq {
				break // stopping early is allowed
			}
		}
		var want []json.RawMessage
		switch {
		case m.IsNull():
			if err != nil || ok {
				t.Fatalf("Elements(%q) of null: %v, %v", name, ok, err)
			}
		case json.Unmarshal(m.Value, &want) != nil:
			if !errors.Is(err, ErrNotArray) {
				t.Fatalf("Elements(%q) of %q: %v, want ErrNotArray", name, m.Value, err)
			}
		default:
			if err != nil || !ok || len(elems) != len(want) {
				t.Fatalf("Elements(%q) of %q: %d elements, %v, %v; want %q", name, m.Value, len(elems), ok, err, want)
			}
			for k, el := range elems {
				if !bytes.Equal(el.Value, want[k]) || !bytes.Equal(o.body[el.Start:el.End], el.Value) {
					t.Fatalf("Elements(%q) of %q: element %d is %q at [%d,%d], want %q", name, m.Value, k, el.Value, el.Start, el.End, want[k])
				}
			}
		}
		if nested, err := frame(m.Value); err == nil {
			sameElements(t, nested)
		}
	}
}
