package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/fieldname"
)

// A version 2 spec with `body: form` reads an
// application/x-www-form-urlencoded body (Faspay's and PayU's callbacks):
// its fields are what the signed text, the key and the type read
// ({{form.NAME}}), the signature may be one of them (signature.field),
// and the core receives the form byte for byte.

// ErrNotForm means the body is not a form webhookd reads one way only:
// empty, an empty pair, a bad %-escape, a field name other than letters,
// digits, "_" and "-", or a field given twice (names compared without
// case, as a core's form binder may compare them). It wraps
// providers.ErrMalformed: 400, before any signature is checked.
var ErrNotForm = fmt.Errorf("%w: body is not a form with unique field names", providers.ErrMalformed)

// maxFormFields bounds the fields read from one form.
const maxFormFields = 256

// formField is one name=value pair, unescaped, with where its raw value
// lies in the body (Sign rewrites it there).
type formField struct {
	name, value string
	start, end  int
}

// formFields is a form's fields in the order sent.
type formFields []formField

// parseForm reads body as a form. A name spelt another way by PHP ("a.b",
// "a[]") or folded by a case-insensitive binder could stand for a signed
// field in the core, so names are plain and unique under case folding.
func parseForm(body []byte) (formFields, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%w (empty)", ErrNotForm)
	}
	var f formFields
	at := 0
	for pair := range strings.SplitSeq(string(body), "&") {
		start := at
		at += len(pair) + 1
		rawName, rawValue, hasValue := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil || !fieldname.Plain(name) {
			return nil, fmt.Errorf("%w (a field name)", ErrNotForm)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, fmt.Errorf("%w (a bad escape)", ErrNotForm)
		}
		if len(f) == maxFormFields || slices.ContainsFunc(f, func(g formField) bool { return strings.EqualFold(g.name, name) }) {
			return nil, fmt.Errorf("%w (%s given twice, or too many fields)", ErrNotForm, name)
		}
		vs := start + len(rawName)
		if hasValue {
			vs++
		}
		f = append(f, formField{name: name, value: value, start: vs, end: start + len(pair)})
	}
	return f, nil
}

// get returns the value of the field called name, and whether it is sent.
func (f formFields) get(name string) (string, bool) {
	i := slices.IndexFunc(f, func(g formField) bool { return g.name == name })
	if i < 0 {
		return "", false
	}
	return f[i].value, true
}

// fingerprint hashes the fields named, in that order, each as its
// length-prefixed name and value (so no two forms hash alike unless those
// fields are equal): the signed fields, which a retry keeps, while it may
// add or reorder the others.
func (f formFields) fingerprint(names []string) string {
	h := sha256.New()
	for _, name := range names {
		v, ok := f.get(name)
		if !ok {
			continue
		}
		fmt.Fprintf(h, "%d:%s%d:%s", len(name), name, len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// withField returns body with the field name's value set to value
// (escaped), rewritten in place or appended, every other byte kept.
func withField(body []byte, f formFields, name, value string) []byte {
	esc := url.QueryEscape(value)
	i := slices.IndexFunc(f, func(g formField) bool { return g.name == name })
	if i < 0 {
		out := append([]byte(nil), body...)
		return append(append(out, "&"+url.QueryEscape(name)+"="...), esc...)
	}
	g := f[i]
	out := make([]byte, 0, len(body)+len(esc)+1)
	out = append(out, body[:g.start]...)
	if g.start == g.end && (g.start == 0 || body[g.start-1] != '=') {
		out = append(out, '=')
	}
	out = append(out, esc...)
	return append(out, body[g.end:]...)
}
