package xendit

import (
	"errors"
	"net/http"

	"github.com/webhookd/webhookd/providers"
)

// Sign signs body for `webhookd replay` and tests: it returns body
// unchanged and an x-callback-token header with the first configured token,
// as Xendit sends a callback.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if len(a.tokens) == 0 {
		return providers.Delivery{}, errors.New("xendit: no callback token configured")
	}
	h := make(http.Header, 1)
	h.Set(HeaderName, a.tokens[0])
	return providers.Delivery{Header: h, Body: body}, nil
}
