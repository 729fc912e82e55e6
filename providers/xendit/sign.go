package xendit

import (
	"errors"
	"net/http"
)

// Sign implements providers.Signer for `webhookd replay`: it returns body
// unchanged and an x-callback-token header with the first configured token,
// as Xendit sends a callback.
func (a *Adapter) Sign(body []byte) ([]byte, http.Header, error) {
	if len(a.tokens) == 0 {
		return nil, nil, errors.New("xendit: no callback token configured")
	}
	h := make(http.Header, 1)
	h.Set(HeaderName, a.tokens[0])
	return body, h, nil
}
