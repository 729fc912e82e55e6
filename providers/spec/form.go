package spec

import (
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/form"
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

// parseForm reads body as a form (providers/internal/form) whose every
// value unescapes. A name spelt another way by PHP ("a.b", "a[]") or
// folded by a case-insensitive binder could stand for a signed field in
// the core, so names are plain and unique under case folding.
func parseForm(body []byte) (formFields, error) {
	f, err := form.Parse(body)
	if err == nil {
		err = f.Values()
	}
	if err != nil {
		return formFields{}, fmt.Errorf("%w (%v)", ErrNotForm, err)
	}
	return formFields{f}, nil
}

// formFields is a form whose values are known to unescape.
type formFields struct{ form.Form }

// get returns the value of the field called name, and whether it is sent.
func (f formFields) get(name string) (string, bool) {
	v, ok, _ := f.Get(name)
	return v, ok
}
