package braintree

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/fieldname"
)

// The form's errors.
var (
	// ErrNotForm means the body cannot be read as a form at all (empty, an
	// empty pair, a bad %-escape in a name): it carries no signature that
	// can be checked, so it wraps providers.ErrUnauthorized (401).
	ErrNotForm = fmt.Errorf("%w: braintree: body is not a form", providers.ErrSignatureInvalid)
	// ErrRepeatedField means a field is given twice (names compared
	// without regard to case): which copy the core service reads is
	// ambiguous. It wraps providers.ErrMalformed (400), as for every form
	// body (docs/contract.md).
	ErrRepeatedField = fmt.Errorf("%w: braintree: a form field is given twice", providers.ErrMalformed)
	// ErrFieldName means a field's name is not letters, digits, "_" and
	// "-" (fieldname.Plain): PHP reads "bt.payload" or "bt_payload[]" as
	// bt_payload, so a core would read it instead of the payload
	// verified. It wraps providers.ErrMalformed (400), as duitku's does.
	ErrFieldName = fmt.Errorf("%w: braintree: a form field name other than letters, digits, _ and -", providers.ErrMalformed)
)

// field is one name=value pair of a form: its name unescaped, its value
// still escaped, and where that raw value lies in the body.
type field struct {
	name       string
	raw        string
	start, end int
}

// form is a parsed form body, its fields in the order sent.
type form []field

// parseForm reads body as application/x-www-form-urlencoded, pair by pair.
// Unlike url.ParseQuery it refuses a field given twice, in any case
// (ErrRepeatedField): a core whose form binder folds case and keeps the
// last value would read another bt_payload than the one verified. Values
// are unescaped only when read (value), so that a bad escape in a signed
// field is that field's error.
func parseForm(body []byte) (form, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%w (empty)", ErrNotForm)
	}
	var (
		f    form
		seen = map[string]bool{}
		at   int
	)
	for _, pair := range strings.Split(string(body), "&") {
		start := at
		at += len(pair) + 1
		if pair == "" {
			return nil, fmt.Errorf("%w (empty pair)", ErrNotForm)
		}
		rawName, rawValue, hasValue := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, fmt.Errorf("%w (bad escape in a field name)", ErrNotForm)
		}
		if !fieldname.Plain(name) {
			return nil, ErrFieldName
		}
		folded := strings.ToLower(name)
		if seen[folded] {
			return nil, ErrRepeatedField
		}
		seen[folded] = true
		vs := start + len(rawName)
		if hasValue {
			vs++
		}
		f = append(f, field{name: name, raw: rawValue, start: vs, end: start + len(pair)})
	}
	return f, nil
}

// value returns the unescaped value of the field named name; present is
// false when there is no such field, and err is set when its value has a
// bad %-escape.
func (f form) value(name string) (v string, present bool, err error) {
	for _, fl := range f {
		if fl.name == name {
			v, err := url.QueryUnescape(fl.raw)
			return v, true, err
		}
	}
	return "", false, nil
}

// index returns the position of the field named name, or -1.
func (f form) index(name string) int {
	for i, fl := range f {
		if fl.name == name {
			return i
		}
	}
	return -1
}
