package duitku

import (
	"errors"
	"net/http"

	"github.com/webhookd/webhookd/providers"
)

// Sign signs body for `webhookd replay` and tests: it returns the
// form body with its signature field set (rewritten in place, or appended
// when absent) for the posted merchantCode, amount and merchantOrderId
// under the first API key, every other byte as it was, and the
// Content-Type Duitku posts with. A body that is not a form, or lacks a
// signed field, cannot be signed.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if len(a.apiKeys) == 0 {
		return providers.Delivery{}, errors.New("duitku: no API key configured")
	}
	f, err := parseForm(body)
	if err != nil {
		return providers.Delivery{}, err
	}
	code, _ := f.get(FieldMerchantCode)
	amount, _ := f.get(FieldAmount)
	order, _ := f.get(FieldMerchantOrderID)
	if code == "" || amount == "" || order == "" {
		return providers.Delivery{}, ErrSignedFieldMissing
	}
	sig := Signature(code, amount, order, a.apiKeys[0])
	out := f.With(body, FieldSignature, sig)
	h := make(http.Header, 1)
	h.Set("Content-Type", ContentType)
	return providers.Delivery{Header: h, Body: out}, nil
}
