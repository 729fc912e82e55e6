package braintree

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// Verify's errors. Each wraps providers.ErrUnauthorized and says which
// check failed, without quoting a key, a signature or the payload.
var (
	// ErrNotSigned means bt_signature or bt_payload is missing or empty.
	ErrNotSigned = fmt.Errorf("%w: braintree: no bt_signature or no bt_payload", providers.ErrSignatureMissing)
	// ErrInvalidPayload means bt_payload holds a character outside
	// [A-Za-z0-9+=/\n], the SDKs' rule, or a bad %-escape.
	ErrInvalidPayload = fmt.Errorf("%w: braintree: bt_payload holds a character outside [A-Za-z0-9+=/\\n]", providers.ErrSignatureInvalid)
	// ErrInvalidSignature means bt_signature has a bad %-escape.
	ErrInvalidSignature = fmt.Errorf("%w: braintree: bt_signature is not readable", providers.ErrSignatureInvalid)
	// ErrUnknownPublicKey means no pair of bt_signature names a configured
	// public key.
	ErrUnknownPublicKey = fmt.Errorf("%w: braintree: bt_signature names no configured public key", providers.ErrSignatureInvalid)
	// ErrNoValidSignature means a pair names a configured public key, but
	// its signature is not that key's over bt_payload.
	ErrNoValidSignature = fmt.Errorf("%w: braintree: signature does not match", providers.ErrSignatureInvalid)
)

// Verify authenticates a notification from its raw form body (headers are
// not read), as Braintree's SDKs parse one: bt_payload must hold only
// [A-Za-z0-9+=/\n]; for some configured key pair, the first
// "public_key|signature" pair of bt_signature (its pairs joined by "&")
// that names its public key must hold its HMAC-SHA1 over bt_payload, or
// over bt_payload and a line feed, compared in constant time. A field given twice is ErrRepeatedField
// (providers.ErrMalformed: 400); every other error wraps
// providers.ErrUnauthorized (401).
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	f, err := parseForm(d.Body)
	if err != nil {
		return err
	}
	sig, _, sigErr := f.Get(FieldSignature)
	payload, _, payloadErr := f.Get(FieldPayload)
	switch {
	case sigErr != nil:
		return ErrInvalidSignature
	case payloadErr != nil:
		return ErrInvalidPayload
	case sig == "" || payload == "":
		return ErrNotSigned
	case !isPayload(payload):
		return ErrInvalidPayload
	}
	named := false
	for i, kp := range a.pairs {
		hexSig, ok := firstSignature(sig, kp.Public)
		if !ok {
			continue
		}
		named = true
		if a.matches(i, hexSig, payload) {
			return nil
		}
	}
	if !named {
		return ErrUnknownPublicKey
	}
	return ErrNoValidSignature
}

// firstSignature returns the signature of the first "public|signature"
// pair of sig (pairs joined by "&") whose public key is public, as the
// SDKs pick it (pairs without "|" are skipped). Only the first counts, so
// that a bt_signature repeating one public key costs two HMACs, not two
// per repetition.
func firstSignature(sig, public string) (string, bool) {
	for pair := range strings.SplitSeq(sig, "&") {
		if pub, hexSig, ok := strings.Cut(pair, "|"); ok && pub == public {
			return hexSig, true
		}
	}
	return "", false
}

// matches reports whether hexSig is pair i's signature over payload, or
// over payload followed by a line feed: one pass over the payload, since
// Sum leaves the MAC's state as it was.
func (a *Adapter) matches(i int, hexSig, payload string) bool {
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha1.Size || hex.EncodeToString(got) != hexSig {
		return false // only lowercase hex: what the SDKs compare against
	}
	m := hmac.New(sha1.New, a.keys[i][:])
	m.Write([]byte(payload))
	asPosted := hmac.Equal(m.Sum(nil), got)
	m.Write([]byte{'\n'})
	withLineFeed := hmac.Equal(m.Sum(nil), got)
	return asPosted || withLineFeed
}

// isPayload reports whether s holds only the characters the SDKs accept in
// a payload: base64's and line feeds.
func isPayload(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '=' || c == '/' || c == '\n') {
			return false
		}
	}
	return true
}
