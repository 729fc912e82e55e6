package providertest

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Format is how a provider encodes its body: what the kit needs to find,
// change, remove and repeat a field without touching any other byte. A
// field is a top-level JSON member or a form field.
type Format interface {
	// Names lists the body's field names, sorted.
	Names(t testing.TB, body []byte) []string
	// Tamper returns copies of body in each of which one byte of name's
	// value is changed, the body still well-formed.
	Tamper(t testing.TB, body []byte, name string) [][]byte
	// Without returns copies of body with name removed (the first), then
	// emptied in each way the encoding allows.
	Without(t testing.TB, body []byte, name string) [][]byte
	// Twice returns copies of body that give name twice, in a way a
	// reader of the encoding could take either value.
	Twice(body []byte, name string) [][]byte
	// Variants returns copies of body with name's value changed: a byte
	// swapped, or the whole value replaced.
	Variants(t testing.TB, body []byte, name string) [][]byte
}

// The formats of Kit.Format.
var (
	// JSON is a JSON object body.
	JSON Format = jsonFormat{}
	// Form is an application/x-www-form-urlencoded body (Duitku's).
	Form Format = formFormat{}
)

// unsignedValue replaces a whole value in Variants.
const unsignedValue = "WEBHOOKD0"

// variantValue is the second value of a field given twice.
const variantValue = "webhookd-conformance-variant"

type jsonFormat struct{}

func (jsonFormat) Names(t testing.TB, body []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Tamper changes bytes inside the quotes of a string, anywhere in any
// other value.
func (jsonFormat) Tamper(t testing.TB, body []byte, name string) [][]byte {
	t.Helper()
	m := member(t, body, name)
	lo, n := m.Start, m.End-m.Start
	if body[m.Start] == '"' {
		lo, n = m.Start+1, n-2
	}
	var out [][]byte
	for _, at := range positions(n) {
		out = append(out, flipAt(body, lo+at))
	}
	return out
}

// Without removes the member, then sets it to null and to "" (re-encoded).
func (jsonFormat) Without(t testing.TB, body []byte, name string) [][]byte {
	t.Helper()
	return [][]byte{withMember(t, body, name, ""), withMember(t, body, name, "null"), withMember(t, body, name, `""`)}
}

// Twice inserts name in another case as the first member: a Go core service
// decodes struct fields case-insensitively, last one wins.
func (jsonFormat) Twice(body []byte, name string) [][]byte {
	var out [][]byte
	for _, variant := range caseVariants(name) {
		out = append(out, insertFirst(body, variant, `"`+variantValue+`"`))
	}
	return out
}

func (jsonFormat) Variants(t testing.TB, body []byte, name string) [][]byte {
	t.Helper()
	m := member(t, body, name)
	lo, hi := m.Start, m.End
	var whole string
	switch v := string(m.Value); {
	case v == "true":
		whole = "false"
	case v == "false":
		whole = "true"
	case v == "null":
		whole = `"` + unsignedValue + `"`
	case v[0] == '"':
		lo, hi = lo+1, hi-1
		whole = `"` + unsignedValue + `"`
	case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
		whole = "1" + v
		if v[0] == '-' {
			whole = "-1" + v[1:]
		}
	}
	var out [][]byte
	for _, at := range alnumPositions(body, lo, hi) {
		out = append(out, swapAt(body, at))
	}
	if whole != "" && whole != string(m.Value) {
		out = append(out, replaceRange(body, m.Start, m.End, whole))
	}
	return out
}

type formFormat struct{}

func (formFormat) Names(t testing.TB, body []byte) []string {
	t.Helper()
	var names []string
	for _, f := range formFields(t, body) {
		names = append(names, f.name)
	}
	sort.Strings(names)
	return names
}

// Tamper changes letters and digits only, so that the body stays a form
// with the same fields.
func (formFormat) Tamper(t testing.TB, body []byte, name string) [][]byte {
	t.Helper()
	start, end := formValue(t, body, name)
	var out [][]byte
	for _, at := range alnumPositions(body, start, end) {
		out = append(out, flipAt(body, at))
	}
	return out
}

// Without removes the pair, then appends it again with an empty value.
func (formFormat) Without(t testing.TB, body []byte, name string) [][]byte {
	t.Helper()
	removed := withoutFormField(body, name)
	return [][]byte{removed, []byte(string(removed) + "&" + url.QueryEscape(name) + "=")}
}

// Twice appends the field again, with its own value and with another.
func (formFormat) Twice(body []byte, name string) [][]byte {
	fields, ok := parseFormFields(body)
	if !ok {
		return nil
	}
	var out [][]byte
	for _, f := range fields {
		if f.name != name {
			continue
		}
		for _, value := range []string{string(body[f.start:f.end]), variantValue} {
			out = append(out, []byte(string(body)+"&"+f.rawName+"="+value))
		}
	}
	return out
}

func (formFormat) Variants(t testing.TB, body []byte, name string) [][]byte {
	t.Helper()
	start, end := formValue(t, body, name)
	var out [][]byte
	for _, at := range alnumPositions(body, start, end) {
		out = append(out, swapAt(body, at))
	}
	if string(body[start:end]) != unsignedValue {
		out = append(out, replaceRange(body, start, end, unsignedValue))
	}
	return out
}

// member returns the top-level member name of a JSON object body.
func member(t testing.TB, body []byte, name string) rawjson.Member {
	t.Helper()
	o, err := rawjson.Parse(body)
	require.NoError(t, err)
	m, ok, err := o.Get(name)
	require.NoError(t, err)
	require.True(t, ok, "member %s missing from the signed body", name)
	return m
}

// caseVariants returns other spellings of name that encoding/json matches
// to the same struct field, JSON-quoted: upper case, and "s" as the long s
// U+017F, once as UTF-8 and once escaped.
func caseVariants(name string) []string {
	quote := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var out []string
	if up := strings.ToUpper(name); up != name {
		out = append(out, quote(up))
	}
	if strings.Contains(name, "s") {
		long := quote(strings.ReplaceAll(name, "s", "\u017f"))
		out = append(out, long, strings.ReplaceAll(long, "\u017f", `\u017f`))
	}
	return out
}

// insertFirst returns body, a JSON object, with the member quotedName:value
// inserted as its first member and every other byte kept.
func insertFirst(body []byte, quotedName, value string) []byte {
	at := bytes.IndexByte(body, '{') + 1
	out := make([]byte, 0, len(body)+len(quotedName)+len(value)+2)
	out = append(out, body[:at]...)
	out = append(out, quotedName+":"+value+","...)
	return append(out, body[at:]...)
}

// withMember returns body re-encoded with the top-level member name set to
// the raw JSON value, or removed when value is "".
func withMember(t testing.TB, body []byte, name, value string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	if value == "" {
		delete(m, name)
	} else {
		m[name] = json.RawMessage(value)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// formField is one pair of a form body: its name as sent, unescaped, and
// where its raw value lies.
type formField struct {
	rawName, name string
	start, end    int
}

// parseFormFields splits a form body into its pairs, keeping offsets; ok is
// false for a body that is not a form.
func parseFormFields(body []byte) (fields []formField, ok bool) {
	at := 0
	for _, pair := range strings.Split(string(body), "&") {
		start := at
		at += len(pair) + 1
		rawName, _, hasValue := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if pair == "" || err != nil {
			return nil, false
		}
		vs := start + len(rawName)
		if hasValue {
			vs++
		}
		fields = append(fields, formField{rawName: rawName, name: name, start: vs, end: start + len(pair)})
	}
	return fields, true
}

func formFields(t testing.TB, body []byte) []formField {
	t.Helper()
	fields, ok := parseFormFields(body)
	require.True(t, ok, "the signed body is not a form")
	return fields
}

// formValue returns where the raw value of the field name lies in body.
func formValue(t testing.TB, body []byte, name string) (start, end int) {
	t.Helper()
	for _, f := range formFields(t, body) {
		if f.name == name {
			return f.start, f.end
		}
	}
	require.Failf(t, "form field missing", "field %s missing from the signed body", name)
	return 0, 0
}

// withoutFormField returns body without the pair named name.
func withoutFormField(body []byte, name string) []byte {
	var kept []string
	for _, pair := range strings.Split(string(body), "&") {
		rawName, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(rawName); err == nil && n == name {
			continue
		}
		kept = append(kept, pair)
	}
	return []byte(strings.Join(kept, "&"))
}

// alnumPositions picks up to five offsets in body[start:end] of letters and
// digits: flip and swapAlnum change those into bytes that need no escaping
// in either format ("a" into "`", "0" into "1").
func alnumPositions(body []byte, start, end int) []int {
	var alnum []int
	for i := start; i < end; i++ {
		c := body[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			alnum = append(alnum, i)
		}
	}
	var out []int
	for _, p := range positions(len(alnum)) {
		out = append(out, alnum[p])
	}
	return out
}
