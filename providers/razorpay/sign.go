package razorpay

import (
	"errors"
	"net/http"

	"github.com/webhookd/webhookd/signature"
)

// SignatureHeader returns the X-Razorpay-Signature value Razorpay sends for
// body signed with secret.
func SignatureHeader(secret string, body []byte) string {
	return signature.HMACSHA256Hex([]byte(secret), body)
}

// Sign implements providers.Signer for `webhookd replay`: it returns body
// unchanged and its X-Razorpay-Signature under the first configured secret.
// It sets no x-razorpay-event-id: that header is not signed and the adapter
// does not read it.
func (a *Adapter) Sign(body []byte) ([]byte, http.Header, error) {
	if len(a.secrets) == 0 {
		return nil, nil, errors.New("razorpay: no webhook secret configured")
	}
	h := make(http.Header, 1)
	h.Set(HeaderName, SignatureHeader(string(a.secrets[0]), body))
	return body, h, nil
}
