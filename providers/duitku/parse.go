package duitku

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// ErrNoEventKey is Parse's error when merchantOrderId, reference or
// resultCode is missing or unusable in a key. It wraps
// providers.ErrMalformed; so do ErrNotForm and ErrRepeatedField, which
// Parse returns for a body that is not a form.
var ErrNoEventKey = fmt.Errorf("%w: duitku: no usable event key (merchantOrderId, reference, resultCode)", providers.ErrNoEventKey)

// MaxFieldBytes is the longest merchantOrderId, reference or resultCode
// accepted. Three of them and their separators, behind "duitku:", stay
// under the dedupe store's key limit (Duitku's own limit on merchantOrderId
// is 50).
const MaxFieldBytes = 120

// fingerprintFields are the callback fields that Duitku's PHP library lists
// (Duitku/Config.php, $callbackParams) and its API documentation adds
// (publisherOrderId, settlementDate, issuerCode), the signature left out
// since it follows from the signed fields. They are fingerprinted by name,
// in this order, as posted: field order in the body does not count, and a
// field Duitku adds later is left out, so that a retry carrying it is not
// answered 422.
//
// Changing this list changes every stored fingerprint: retries of events in
// flight across the deploy would get 422.
var fingerprintFields = []string{
	"additionalParam", "amount", "issuerCode", "merchantCode", "merchantOrderId", "merchantUserId",
	"paymentCode", "productDetail", "publisherOrderId", "reference", "resultCode", "settlementDate", "spUserHash",
}

// event derives the event from a verified form body (docs/contract.md,
// "Event keys"): Key is merchantOrderId:reference:resultCode, Type is
// resultCode ("00" success, "01" failed or pending, per Duitku). reference
// and resultCode may not hold ":", so the key splits one way only even
// when the merchant's own order id holds one. Its errors wrap
// providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
	f, err := parseForm(body)
	if err != nil {
		return providers.Event{}, err
	}
	order, _ := f.get(FieldMerchantOrderID)
	ref, _ := f.get(FieldReference)
	code, _ := f.get(FieldResultCode)
	if !providers.IsToken(order, MaxFieldBytes) || !isPart(ref) || !isPart(code) {
		return providers.Event{}, ErrNoEventKey
	}
	return providers.Event{Key: order + ":" + ref + ":" + code, Type: code, Fingerprint: f.Fingerprint(fingerprintFields)}, nil
}

func isPart(s string) bool {
	return providers.IsToken(s, MaxFieldBytes) && !strings.Contains(s, ":")
}
