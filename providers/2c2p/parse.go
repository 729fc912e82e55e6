package twoctwop

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed (400).
var (
	// ErrNotClaims means the verified token's claims are not a JSON object
	// with unique member names.
	ErrNotClaims = fmt.Errorf("%w: 2c2p: the token's claims are not a JSON object with unique names", providers.ErrMalformed)
	// ErrNoEventKey means invoiceNo or respCode is missing, or one of
	// invoiceNo, respCode and tranRef is not a string or number, not a
	// usable token (see MaxFieldBytes) or holds ":".
	ErrNoEventKey = fmt.Errorf("%w: 2c2p: no usable event key (invoiceNo, respCode, tranRef)", providers.ErrMalformed)
)

// MaxFieldBytes is the longest invoiceNo, respCode or tranRef accepted.
// Three of them and their separators, behind "2c2p:", stay under the
// dedupe store's key limit (2C2P's invoiceNo is at most 50 characters).
const MaxFieldBytes = 150

// The claims the key is made of.
const (
	ClaimInvoiceNo = "invoiceNo"
	ClaimRespCode  = "respCode"
	ClaimTranRef   = "tranRef"
)

// fingerprintClaims are the claims of 2C2P's documented backend response
// (api-payment-response-backend) that say what happened, fingerprinted by
// name in this order, so that a retry with its claims in another order,
// or with a claim 2C2P added since, is the same payload.
//
// Changing this list changes every stored fingerprint: retries of events in
// flight across the deploy would get 422.
var fingerprintClaims = []string{
	"merchantID", "invoiceNo", "cardNo", "accountNo", "amount", "currencyCode", "tranRef", "referenceNo",
	"approvalCode", "eci", "transactionDateTime", "respCode", "respDesc",
}

// event derives the event from a verified body: Key is invoiceNo:respCode,
// then :tranRef when present (empty and null count as absent), Type is
// respCode. No part may hold ":", so a key splits back one way: a key of
// two parts is never one of three. Its errors wrap providers.ErrMalformed,
// or providers.ErrUnauthorized for a body Verify refuses too.
func event(body []byte) (providers.Event, error) {
	tok, _, err := bodyToken(body)
	if err != nil {
		return providers.Event{}, err
	}
	t, err := parseToken(tok)
	if err != nil {
		return providers.Event{}, err
	}
	claims, err := rawjson.Parse(t.claims)
	if err != nil {
		return providers.Event{}, ErrNotClaims
	}
	invoice, err := part(claims, ClaimInvoiceNo, true)
	if err != nil {
		return providers.Event{}, err
	}
	code, err := part(claims, ClaimRespCode, true)
	if err != nil {
		return providers.Event{}, err
	}
	ref, err := part(claims, ClaimTranRef, false)
	if err != nil {
		return providers.Event{}, err
	}
	key := invoice + ":" + code
	if ref != "" {
		key += ":" + ref
	}
	fp, err := claims.Fingerprint(fingerprintClaims...)
	if err != nil {
		return providers.Event{}, ErrNotClaims
	}
	return providers.Event{Key: key, Type: code, Fingerprint: fp}, nil
}

// part returns the claim name as text (a string's value, a number's raw
// text), "" when it is absent, null or empty and not required.
func part(claims *rawjson.Object, name string, required bool) (string, error) {
	v, ok, err := claims.Scalar(name)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w (%s)", ErrNoEventKey, name)
	case !ok || v == "":
		if required {
			return "", fmt.Errorf("%w (%s is missing)", ErrNoEventKey, name)
		}
		return "", nil
	case !providers.IsToken(v, MaxFieldBytes) || strings.Contains(v, ":"):
		return "", fmt.Errorf("%w (%s)", ErrNoEventKey, name)
	}
	return v, nil
}
