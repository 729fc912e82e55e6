package duitku

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/fieldname"
)

// The form's errors. Each wraps providers.ErrMalformed (400): a body whose
// fields cannot be read one way only is not verified at all.
var (
	// ErrNotForm means the body is not an application/x-www-form-urlencoded
	// form: empty, an empty pair, a bad %-escape, or a field name other
	// than letters, digits, "_" and "-".
	ErrNotForm = fmt.Errorf("%w: duitku: body is not a form", providers.ErrMalformed)
	// ErrRepeatedField means a field is given twice.
	ErrRepeatedField = fmt.Errorf("%w: duitku: a form field is given twice", providers.ErrMalformed)
)

// field is one name=value pair of a form, unescaped, with where its raw
// value lies in the body.
type field struct {
	name, value string
	// start and end delimit the raw (escaped) value in the body; start is
	// just after "=" (or at the end of the name when there is no "=").
	start, end int
}

// form is a parsed form body, its fields in the order sent.
type form []field

// parseForm reads body as application/x-www-form-urlencoded, pair by pair,
// unescaping each name and value the way net/url does. Unlike
// url.ParseQuery it refuses a field given twice (ErrRepeatedField) and an
// empty pair, and it accepts only names of letters, digits, "_" and "-":
// PHP, which Duitku's own library runs on, reads "a.b", "a b" and "a[]" as
// other names than they are spelt, so that one of them could stand for a
// signed field in a PHP core service.
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
		if err != nil || !fieldname.Plain(name) {
			return nil, fmt.Errorf("%w (field name)", ErrNotForm)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, fmt.Errorf("%w (bad escape in a value)", ErrNotForm)
		}
		// Compared case-insensitively: a core whose form binder folds case
		// (ASP.NET's Request.Form, frameworks that lower-case names) and
		// keeps the last value would read "&MerchantOrderId=X" appended to
		// a genuine callback as the order, while the signature and the key
		// read "merchantOrderId". isFieldName allows ASCII only, so
		// ToLower folds every spelling a decoder could match.
		folded := strings.ToLower(name)
		if seen[folded] {
			return nil, ErrRepeatedField
		}
		seen[folded] = true
		vs := start + len(rawName)
		if hasValue {
			vs++
		}
		f = append(f, field{name: name, value: value, start: vs, end: start + len(pair)})
	}
	return f, nil
}

// get returns the value of the field named name.
func (f form) get(name string) (string, bool) {
	for _, fl := range f {
		if fl.name == name {
			return fl.value, true
		}
	}
	return "", false
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
