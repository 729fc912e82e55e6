package adyen

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// Verify's errors. Each wraps providers.ErrUnauthorized and says which check
// failed, without quoting a key, a signature or the body.
var (
	// ErrNotConfigured means the adapter has no HMAC key (the zero value).
	ErrNotConfigured = fmt.Errorf("%w: adyen: adapter not configured", providers.ErrUnauthorized)
	// ErrBasicAuth means basic auth is configured and the request's
	// Authorization header is missing, sent twice or wrong.
	ErrBasicAuth = fmt.Errorf("%w: adyen: basic auth missing or wrong", providers.ErrSignatureInvalid)
	// ErrUnreadableBody means the body is not a notification whose
	// items' signatures can be checked: not one JSON object with unique
	// member names, no live or notificationItems member, an item that is
	// not an object holding a NotificationRequestItem object and nothing
	// else, a signed
	// field that is not a string (amount.value not an integer), or more
	// than MaxItems items.
	ErrUnreadableBody = fmt.Errorf("%w: adyen: body is not a readable notification", providers.ErrUnauthorized)
	// ErrLive means the request's live member is not the string "true"
	// or "false", the only values Adyen sends. live is not signed and is
	// copied into every item's forwarded body, so nothing else is let
	// through.
	ErrLive = fmt.Errorf("%w: adyen: live is not \"true\" or \"false\"", providers.ErrUnauthorized)
	// ErrNoItems means notificationItems is empty: nothing is signed.
	ErrNoItems = fmt.Errorf("%w: adyen: notification has no items", providers.ErrUnauthorized)
	// ErrNotSigned means an item has no additionalData.hmacSignature, or
	// an empty one.
	ErrNotSigned = fmt.Errorf("%w: adyen: item has no hmacSignature", providers.ErrSignatureMissing)
	// ErrFieldFormat means a signed field of an item is not in the format
	// Adyen documents (format.go): a pspReference or originalReference
	// that is not letters and digits, a merchantAccountCode with a ":", a
	// currency that is not three capital letters, an eventCode that is
	// not capital letters, digits and underscores, or a success that is
	// neither "true" nor "false". Such a text has more than one reading.
	ErrFieldFormat = fmt.Errorf("%w: adyen: a signed item field is not in its documented format", providers.ErrUnauthorized)
	// ErrMerchantAccount means WithMerchantAccounts is set and an item is
	// for another merchantAccountCode.
	ErrMerchantAccount = fmt.Errorf("%w: adyen: item is for a merchant account not configured", providers.ErrAccountNotAllowed)
	// ErrNoValidSignature means an item's hmacSignature is not the base64
	// HMAC-SHA256 of its signed fields under any configured key.
	ErrNoValidSignature = fmt.Errorf("%w: adyen: item signature does not match", providers.ErrSignatureInvalid)
)

// Verify authenticates a request: its basic auth when configured, and the
// hmacSignature of every item, so that one forged item refuses the whole
// request before anything is stored. Each item's signed fields must be in
// their documented formats, so that its signed text has one reading
// (format.go), and, with WithMerchantAccounts, name a configured account. Signatures are compared in constant
// time, as Adyen's library does (hmac.Equal). It returns nil or one of the
// errors above; an item's error says which item (counting from 1).
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	header, body := d.Header, d.Body
	if len(a.keys) == 0 {
		return ErrNotConfigured
	}
	if a.basicAuth != "" && !a.basicAuthOK(header) {
		return ErrBasicAuth
	}
	n, err := readNotification(body)
	switch {
	case errors.Is(err, errLive):
		return ErrLive
	case err != nil:
		return ErrUnreadableBody
	}
	if len(n.items) == 0 {
		return ErrNoItems
	}
	for i := range n.items {
		if err := a.verifyItem(&n.items[i].f); err != nil {
			return fmt.Errorf("%w (item %d of %d)", err, i+1, len(n.items))
		}
	}
	// Accounts once every item's signature holds, so that a refusal for
	// one is of a genuine request (its keys are logged), never hiding a
	// forged item.
	for i := range n.items {
		if a.accounts != nil && !a.accounts[n.items[i].f.merchant] {
			return fmt.Errorf("%w (item %d of %d)", ErrMerchantAccount, i+1, len(n.items))
		}
	}
	return nil
}

// sigLen is the length of a base64 HMAC-SHA256.
var sigLen = base64.StdEncoding.EncodedLen(32)

func (a *Adapter) verifyItem(f *fields) error {
	if f.signature == "" {
		return ErrNotSigned
	}
	if !f.readFormats() {
		return ErrFieldFormat
	}
	if len(f.signature) != sigLen {
		return ErrNoValidSignature
	}
	// Strict: one signature has one spelling, as Adyen compares the
	// base64 strings themselves. DecodeString, not Decode into a 32-byte
	// array: 44 characters without padding decode to 33 bytes
	// (testdata/fuzz/FuzzVerify).
	got, err := base64.StdEncoding.Strict().DecodeString(f.signature)
	if err != nil || len(got) != 32 {
		return ErrNoValidSignature
	}
	text := f.signedText()
	for _, key := range a.keys {
		if signature.Equal(got, signature.HMACSHA256(key, text)) {
			return nil
		}
	}
	return ErrNoValidSignature
}

// basicAuthOK compares the request's basic auth with the configured one in
// constant time. A request with the header twice is refused: a proxy and
// the Go server could each read another of the two.
func (a *Adapter) basicAuthOK(header http.Header) bool {
	values := header.Values("Authorization")
	if len(values) != 1 {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(values[0]), []byte(a.basicAuth)) == 1
}

// basicAuthHeader is the Authorization value for userPassword.
func basicAuthHeader(userPassword string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(userPassword))
}
