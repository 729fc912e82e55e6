package braintree

import (
	"errors"
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/form"
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
	// "-" (form.Plain): PHP reads "bt.payload" or "bt_payload[]" as
	// bt_payload, so a core would read it instead of the payload
	// verified. It wraps providers.ErrMalformed (400), as duitku's does.
	ErrFieldName = fmt.Errorf("%w: braintree: a form field name other than letters, digits, _ and -", providers.ErrMalformed)
)

// parseForm reads body as a form (providers/internal/form), each way of
// not being one given its error here: a bad name or an empty body carries
// no signature that can be checked; a repeated field is ambiguous. Values
// are unescaped only when read, so that a bad escape in a signed field is
// that field's error.
func parseForm(body []byte) (form.Form, error) {
	f, err := form.Parse(body)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, form.ErrRepeated):
		return nil, ErrRepeatedField
	case errors.Is(err, form.ErrName):
		return nil, ErrFieldName
	default:
		return nil, fmt.Errorf("%w (%v)", ErrNotForm, err)
	}
}
