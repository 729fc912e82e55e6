package midtrans

import (
	"context"
	"fmt"
	"regexp"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/signature"
)

// Verify's errors. Each wraps providers.ErrUnauthorized, and each says which
// check failed without quoting the body, the signature or the key.
var (
	// ErrUnreadableBody means the body is not a JSON object with unique
	// member names, so it carries no signature that could be checked.
	ErrUnreadableBody = fmt.Errorf("%w: midtrans: body is not a JSON object with unique member names", providers.ErrUnauthorized)
	// ErrNotSigned means the body has no signature_key, or an empty or null
	// one.
	ErrNotSigned = fmt.Errorf("%w: midtrans: no signature_key", providers.ErrSignatureMissing)
	// ErrInvalidSignedField means order_id, status_code or gross_amount is
	// missing or not shaped as Midtrans sends it: order_id a non-empty
	// string of at most MaxOrderIDBytes, status_code three digits,
	// gross_amount a plain decimal without leading zeros (each a JSON string,
	// or a number whose raw text is used).
	ErrInvalidSignedField = fmt.Errorf("%w: midtrans: order_id, status_code or gross_amount missing or malformed", providers.ErrSignatureInvalid)
	// ErrNoValidSignature means signature_key is not the SHA-512 of the
	// signed fields and the server key (or not 128 lowercase hex digits).
	ErrNoValidSignature = fmt.Errorf("%w: midtrans: signature_key does not match", providers.ErrSignatureInvalid)
)

// MaxOrderIDBytes is the longest order_id Verify accepts. Midtrans limits
// order ids to 50 characters.
const MaxOrderIDBytes = 255

// SignatureField is the body field that carries Midtrans's signature.
const SignatureField = "signature_key"

var (
	statusCodeRE  = regexp.MustCompile(`^[1-9][0-9]{2}$`)
	grossAmountRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,29})(\.[0-9]{1,10})?$`)
	sigRE         = regexp.MustCompile(`^[0-9a-f]{128}$`)
)

// Verify authenticates a notification from its body alone (Midtrans sends no
// signature header): signature_key must be the lowercase hex SHA-512 of
// order_id + status_code + gross_amount + the server key, each field taken
// as its raw text. It returns ErrUnreadableBody, ErrNotSigned,
// ErrInvalidSignedField or ErrNoValidSignature, all of which wrap
// providers.ErrUnauthorized.
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	body := d.Body
	if a.serverKey == "" {
		return fmt.Errorf("%w: midtrans: adapter not configured", providers.ErrUnauthorized)
	}
	o, err := rawjson.Parse(body)
	if err != nil {
		return ErrUnreadableBody
	}
	sig, ok, err := o.String(SignatureField)
	if err != nil || !ok || sig == "" {
		return ErrNotSigned
	}
	if !sigRE.MatchString(sig) {
		return ErrNoValidSignature
	}
	signed, err := signedText(o)
	if err != nil {
		return err
	}
	if !signature.EqualString(a.signatureKey(signed), sig) {
		return ErrNoValidSignature
	}
	return nil
}

// signatureKey is Midtrans's signature over the signed text.
func (a *Adapter) signatureKey(signed string) string {
	return signature.SHA512Hex(signed + a.serverKey)
}

// SignatureKey returns the signature_key Midtrans computes for the three
// signed fields under serverKey. Tests and tools use it to build vectors.
func SignatureKey(orderID, statusCode, grossAmount, serverKey string) string {
	return signature.SHA512Hex(orderID + statusCode + grossAmount + serverKey)
}

// signedText returns order_id + status_code + gross_amount as they arrived,
// after checking each field's shape.
func signedText(o *rawjson.Object) (string, error) {
	orderID, ok, err := o.Scalar("order_id")
	if err != nil || !ok || orderID == "" || len(orderID) > MaxOrderIDBytes {
		return "", ErrInvalidSignedField
	}
	status, ok, err := o.Scalar("status_code")
	if err != nil || !ok || !statusCodeRE.MatchString(status) {
		return "", ErrInvalidSignedField
	}
	gross, ok, err := o.Scalar("gross_amount")
	if err != nil || !ok || !grossAmountRE.MatchString(gross) {
		return "", ErrInvalidSignedField
	}
	return orderID + status + gross, nil
}
