package providertest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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

func formFields(t *testing.T, body []byte) []formField {
	t.Helper()
	fields, ok := parseFormFields(body)
	require.True(t, ok, "the signed body is not a form")
	return fields
}

// formValue returns where the raw value of the field name lies in body.
func formValue(t *testing.T, body []byte, name string) (start, end int) {
	t.Helper()
	for _, f := range formFields(t, body) {
		if f.name == name {
			return f.start, f.end
		}
	}
	require.Failf(t, "form field missing", "field %s missing from the signed body", name)
	return 0, 0
}

// formPositions picks up to five offsets in body[start:end] of letters and
// digits: flip changes those into other bytes that need no escaping ("a"
// into "`", "0" into "1"), so the body stays a form with the same fields.
func formPositions(body []byte, start, end int) []int {
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

// withoutFormField returns body without the pair named name.
func withoutFormField(t *testing.T, body []byte, name string) []byte {
	t.Helper()
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

// FormReordered returns a form body with its pairs in reverse order, each
// pair's bytes kept: the same callback as a provider that posts its fields
// in another order would send it. A body that is not a form is returned
// unchanged.
func FormReordered(body []byte) []byte {
	if _, ok := parseFormFields(body); !ok {
		return body
	}
	pairs := strings.Split(string(body), "&")
	for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
		pairs[i], pairs[j] = pairs[j], pairs[i]
	}
	return []byte(strings.Join(pairs, "&"))
}

// WithFormField returns a function that appends the field name=value
// (escaped) to a form body that does not have it yet: a field the provider
// added since the first attempt. Any other body is returned unchanged.
func WithFormField(name, value string) func(body []byte) []byte {
	return func(body []byte) []byte {
		fields, ok := parseFormFields(body)
		if !ok {
			return body
		}
		for _, f := range fields {
			if f.name == name {
				return body
			}
		}
		return []byte(string(body) + "&" + url.QueryEscape(name) + "=" + url.QueryEscape(value))
	}
}

// ChangeFormAmount returns a Kit.Change for a form: it puts a "1" before
// the value of the first of names that the form has and whose value starts
// with a digit ("10000" becomes "110000"), every other byte kept. A body
// with none of them is returned unchanged (and then fails the kit's
// "Change must change the body" check).
func ChangeFormAmount(names ...string) func(body []byte) []byte {
	return func(body []byte) []byte {
		fields, ok := parseFormFields(body)
		if !ok {
			return body
		}
		for _, n := range names {
			for _, f := range fields {
				if f.name == n && f.end > f.start && '0' <= body[f.start] && body[f.start] <= '9' {
					out := make([]byte, 0, len(body)+1)
					out = append(out, body[:f.start]...)
					out = append(out, '1')
					return append(out, body[f.start:]...)
				}
			}
		}
		return body
	}
}
