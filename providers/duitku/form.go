package duitku

import (
	"errors"
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/form"
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

// parseForm reads body as a form (providers/internal/form) whose every
// value unescapes: PHP, which Duitku's own library runs on, reads "a.b",
// "a b" and "a[]" as other names than they are spelt, and a core whose
// form binder folds case (ASP.NET's Request.Form, frameworks that
// lower-case names) and keeps the last value would read
// "&MerchantOrderId=X" appended to a genuine callback as the order, while
// the signature and the key read "merchantOrderId".
func parseForm(body []byte) (fields, error) {
	f, err := form.Parse(body)
	if err == nil {
		err = f.Values()
	}
	switch {
	case err == nil:
		return fields{f}, nil
	case errors.Is(err, form.ErrRepeated):
		return fields{}, ErrRepeatedField
	default:
		return fields{}, fmt.Errorf("%w (%v)", ErrNotForm, err)
	}
}

// fields is a form whose values are known to unescape.
type fields struct{ form.Form }

// get returns the value of the field named name.
func (f fields) get(name string) (string, bool) {
	v, ok, _ := f.Get(name)
	return v, ok
}
