package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The jsontext tokenizer that Parse used before it read a body once
// (syntax.go): kept as the reference that FuzzParseTokenizer holds Parse
// to, and that FuzzFrame holds frame to.

// decoderOptions configure the tokenizer as lenient as encoding/json in
// what it accepts, and no more: invalid UTF-8 and lone surrogate escapes
// in strings are read as U+FFFD, and duplicate names are left to
// checkNames.
var decoderOptions = []jsontext.Options{
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
}

// tokenizer is a reusable jsontext.Decoder reading straight from a body.
type tokenizer struct {
	dec jsontext.Decoder
	src bytes.Buffer
}

var tokenizers = sync.Pool{New: func() any { return new(tokenizer) }}

// parseTokenizer is Parse as it was: the tokenizer, then checkNames.
func parseTokenizer(body []byte) (*Object, error) {
	o, err := tokenize(body)
	if err != nil {
		return nil, err
	}
	if err := checkNames(body); err != nil {
		return nil, err
	}
	return o, nil
}

// tokenize frames body's members with a pooled tokenizer, which validates
// body.
func tokenize(body []byte) (*Object, error) {
	t := tokenizers.Get().(*tokenizer)
	o, err := t.object(body)
	t.src = bytes.Buffer{}
	t.dec.Reset(&t.src, decoderOptions...)
	tokenizers.Put(t)
	return o, err
}

func (t *tokenizer) object(body []byte) (*Object, error) {
	t.src = *bytes.NewBuffer(body)
	t.dec.Reset(&t.src, decoderOptions...)
	if tok, err := t.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, ErrNotObject
	}
	open := int(t.dec.InputOffset())
	var buf [32]entry
	members := buf[:0]
	for t.dec.PeekKind() == '"' {
		name, err := t.dec.ReadValue()
		if err != nil {
			return nil, ErrNotObject
		}
		nameEnd := int(t.dec.InputOffset()) - 1
		e := entry{nameStart: nameEnd - (len(name) - 2), nameEnd: nameEnd}
		value, err := t.dec.ReadValue()
		if err != nil {
			return nil, ErrNotObject
		}
		e.end = int(t.dec.InputOffset())
		e.start = e.end - len(value)
		members = append(members, e)
	}
	if tok, err := t.dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return nil, ErrNotObject
	}
	if _, err := t.dec.ReadToken(); err != io.EOF {
		return nil, ErrNotObject
	}
	return newObject(body, open, members), nil
}

// checkNames reports whether any object in body, at any depth, has two
// member names that are equal under foldKey. body must be valid JSON.
//
// It needs no allocation for bodies whose objects nest and hold few enough
// members to fit the stack buffers below, whatever the names.
func checkNames(body []byte) error {
	var namesBuf [64]name
	var openBuf [16]openObject
	names := namesBuf[:0] // the names of the open objects
	open := openBuf[:0]
	for i := nextStructural(body, 0); i < len(body); i = nextStructural(body, i+1) {
		switch body[i] {
		case '{':
			open = append(open, openObject{first: len(names), ascii: true})
		case '}':
			if len(open) == 0 {
				return ErrNotObject // not valid JSON after all
			}
			obj := open[len(open)-1]
			open = open[:len(open)-1]
			if hasVariants(names[obj.first:], obj.ascii) {
				return ErrDuplicate
			}
			names = names[:obj.first]
		case '"':
			start, end := i+1, stringEnd(body, i+1)
			i = end
			// In valid JSON a string followed by a colon is a member name.
			if colon := nameColon(body, end+1); colon >= 0 && len(open) > 0 {
				n := name{raw: body[start:end]}
				var ascii bool
				n.key, ascii = foldHash(n.raw)
				open[len(open)-1].ascii = open[len(open)-1].ascii && ascii
				names = append(names, n)
				i = colon // the value starts after it: often at once
			}
		}
	}
	return nil
}

// openObject is an object that checkNames has not closed yet.
type openObject struct {
	first int  // where its names start in checkNames's list
	ascii bool // all its names so far are plain ASCII (foldHash's ok)
}

// nameColon returns the offset of the colon when the first byte at or
// after i that is not white space is one, else -1.
func nameColon(body []byte, i int) int {
	for ; i < len(body); i++ {
		switch body[i] {
		case ' ', '\t', '\n', '\r':
		case ':':
			return i
		default:
			return -1
		}
	}
	return -1
}

// FuzzParseTokenizer holds Parse, which reads a body once, to the
// tokenizer and name check it replaced: the same accept or reject
// decision with the same error, and the same Object.
func FuzzParseTokenizer(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "*", "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range syntaxCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameParse(t, body)
	})
}

// sameParse fails t unless Parse and parseTokenizer agree on body.
func sameParse(t *testing.T, body []byte) {
	t.Helper()
	got, errGot := Parse(body)
	want, errWant := parseTokenizer(body)
	if !errors.Is(errGot, errWant) || (errGot == nil) != (errWant == nil) {
		t.Fatalf("Parse(%q): %v, the tokenizer: %v", body, errGot, errWant)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse(%q) = %+v, the tokenizer: %+v", body, got, want)
	}
}

// syntaxCases are bodies at the edges of JSON's syntax and of the name
// check: each is accepted or refused by Parse as by the tokenizer.
var syntaxCases = []string{
	``, ` `, `{`, `}`, `{}`, ` {} `, "\t{}\r\n", "\ufeff{}", "\x00{}", "{}\x00", "{\x0b}", "{\f}", "{\u00a0}",
	`{}{}`, `{} x`, `{}}`, `[]`, `null`, `"a"`, `1`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{"a"::1}`, `{:1}`,
	`{"a":1,}`, `{,"a":1}`, `{"a":1,,"b":2}`, `{"a":1 "b":2}`, `{"a":[}`, `{"a":[1,]}`, `{"a":[,1]}`,
	`{"a":[1 2]}`, `{"a":{]}`, `{"a":[}]}`, `{"a":{"b":1]}`, `{"a":[[[]]]}`, `{"a":[{},{},[]]}`, `{1:2}`,
	`{"a":0}`, `{"a":-0}`, `{"a":01}`, `{"a":-01}`, `{"a":-}`, `{"a":+1}`, `{"a":.5}`, `{"a":1.}`,
	`{"a":1.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":1E-2}`, `{"a":1e5.5}`, `{"a":1.5e+3}`, `{"a":0x10}`,
	`{"a":-0.0e+5}`, `{"a":1ee2}`, `{"a":00}`, `{"a":0.}`, `{"a":-.5}`, `{"a":123456789012345678901234567890}`,
	`{"a":true}`, `{"a":false}`, `{"a":null}`, `{"a":tru}`, `{"a":truex}`, `{"a":nul}`, `{"a":True}`, `{"a":NaN}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12G4"}`, `{"a":"\U1234"}`, `{"a":"\u00e9"}`, `{"a":"\ud800"}`,
	`{"a":"\/\b\f\n\r\t\"\\"}`, `{"a":"\'"}`, `{"a":"\`, `{"a":"`, `{"a`, `{"a":"x`, "{\"a\":\"\t\"}",
	"{\"a\":\"\x1f\"}", "{\"a\":\"\x7f\"}", "{\"a\xff\":\"\xfe\"}", "{\"a\":\"" + strings.Repeat("x", 20) + "\x01\"}",
	"{\"a\":\"" + strings.Repeat("x", 20) + "\\\"" + strings.Repeat("y", 20) + "\"}",
	`{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"a":{"b":1,"B":2}}`, `{"a":[{"b":1,"b":2}]}`, `{"a":1,"a":2,}`,
	`{"a":1,"a":2`, `{"a":{"b":1,"b":2},"c":x}`, `{"a":1,"\u0061":2}`, `{"ſ":1,"S":2}`, `{"k":1,"K":2}`,
	`{"a":"b","c":{"a":"b"},"d":[{"a":1},{"a":2}]}`, `{"a" :` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}`,
	`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"a":` + strings.Repeat(`{"a":`, 9998) + `1` + strings.Repeat(`}`, 9998) + `}`,
	`{"a":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat(`}`, 9999) + `}`,
	manyMembersInternal(40), manyMembersInternal(40) + `,"m0":1}`,
	"{\n" + strings.Repeat(" ", 20) + "\"a\":\n\t 1\n   \r\n}", "{\n        \"a\":1\n        }", "{\n       \"a\":1\n       \x00}",
	"{\n  \"a\":\n" + strings.Repeat(" ", 7) + "\x0b1}", "{\"a\":1}\n" + strings.Repeat(" ", 9), "{\"a\":1}\n" + strings.Repeat(" ", 9) + "x",
	"{\n\n\n  \n\t\"a\":1}", "{\n" + strings.Repeat(" ", 8),
}

// manyMembersInternal is an object of n members, open when it ends with
// a comma cut off: syntaxCases append to it.
func manyMembersInternal(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"m` + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + `":` + `[` + strings.Repeat("1,", i%4) + `1]`)
	}
	return b.String() + "}"
}

// TestSyntaxAgreesWithTokenizer: Parse decides and frames every edge case
// of syntaxCases as the tokenizer and name check did.
func TestSyntaxAgreesWithTokenizer(t *testing.T) {
	for _, s := range syntaxCases {
		sameParse(t, []byte(s))
		_, err := Parse([]byte(s))
		valid := json.Valid([]byte(s)) && strings.TrimLeft(s, " \t\r\n")[0] == '{'
		if accepted := err == nil || errors.Is(err, ErrDuplicate); accepted != valid {
			t.Fatalf("Parse(%q): %v; json.Valid and an object: %v", s, err, valid)
		}
	}
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "*", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatal("no fixtures", err)
	}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sameParse(t, body)
	}
}
