package duitku

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// Verify's errors. Each wraps providers.ErrUnauthorized and says which
// check failed, without quoting a field's value or an API key.
var (
	// ErrNotSigned means the form has no signature field, or an empty one.
	ErrNotSigned = fmt.Errorf("%w: duitku: no signature field", providers.ErrSignatureMissing)
	// ErrInvalidSignature means signature is not 32 lowercase hex digits.
	ErrInvalidSignature = fmt.Errorf("%w: duitku: signature is not 32 lowercase hex digits", providers.ErrSignatureInvalid)
	// ErrSignedFieldMissing means merchantCode, amount or merchantOrderId
	// is missing or empty.
	ErrSignedFieldMissing = fmt.Errorf("%w: duitku: a signed field (merchantCode, amount, merchantOrderId) is missing", providers.ErrSignatureMissing)
	// ErrForeignMerchant means merchantCode is not the configured merchant
	// code: a callback for another Duitku project.
	ErrForeignMerchant = fmt.Errorf("%w: duitku: merchantCode is not ours", providers.ErrAccountNotAllowed)
	// ErrNoValidSignature means the signature matches no configured API key.
	ErrNoValidSignature = fmt.Errorf("%w: duitku: signature does not match", providers.ErrSignatureInvalid)
)

// Verify authenticates a callback from its raw form body (headers are not
// read): signature must be md5(merchantCode + amount + merchantOrderId +
// apiKey) in lowercase hex for some configured API key, over the field
// values as posted, compared in constant time; merchantCode must be the
// configured one. A body that is not a form, or gives a field twice, is
// refused with ErrNotForm or ErrRepeatedField (they wrap
// providers.ErrMalformed: 400); every other error wraps
// providers.ErrUnauthorized (401).
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	body := d.Body
	f, err := parseForm(body)
	if err != nil {
		return err
	}
	sig, _ := f.get(FieldSignature)
	switch {
	case sig == "":
		return ErrNotSigned
	case !isLowerHex(sig, 2*md5.Size):
		return ErrInvalidSignature
	}
	code, _ := f.get(FieldMerchantCode)
	amount, _ := f.get(FieldAmount)
	order, _ := f.get(FieldMerchantOrderID)
	if code == "" || amount == "" || order == "" {
		return ErrSignedFieldMissing
	}
	for _, key := range a.apiKeys {
		if signature.EqualString(sig, Signature(code, amount, order, key)) {
			// The account is checked once the signature holds, so that a
			// refusal for it is of a genuine callback (its key is logged).
			if !signature.EqualString(code, a.merchantCode) {
				return ErrForeignMerchant
			}
			return nil
		}
	}
	return ErrNoValidSignature
}

// Signature returns the signature field Duitku sends for a callback with
// these posted values: the lowercase hex MD5 of their concatenation, in
// this order, with the API key last.
func Signature(merchantCode, amount, merchantOrderID, apiKey string) string {
	sum := md5.Sum([]byte(merchantCode + amount + merchantOrderID + apiKey))
	return hex.EncodeToString(sum[:])
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
