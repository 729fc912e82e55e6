package braintree

import (
	"errors"
	"net/http"

	"github.com/webhookd/webhookd/providers"
)

// Sign signs body for `webhookd replay` and tests as Braintree would with
// the first key pair: it returns the form body with bt_signature set to
// "public_key|<HMAC-SHA1 of bt_payload>" (rewritten in place, or appended
// when absent), every other byte as it was, and the Content-Type Braintree
// posts with. A body that is not a form, or has no usable bt_payload,
// cannot be signed.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if len(a.pairs) == 0 {
		return providers.Delivery{}, errors.New("braintree: no key pair configured")
	}
	f, err := parseForm(body)
	if err != nil {
		return providers.Delivery{}, err
	}
	payload, _, err := f.Get(FieldPayload)
	if err != nil || payload == "" || !isPayload(payload) {
		return providers.Delivery{}, ErrInvalidPayload
	}
	kp := a.pairs[0]
	out := f.With(body, FieldSignature, kp.Public+"|"+Signature(kp.Private, []byte(payload)))
	h := make(http.Header, 1)
	h.Set("Content-Type", ContentType)
	return providers.Delivery{Header: h, Body: out}, nil
}
