package razorpay

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Verify's errors. Each wraps providers.ErrUnauthorized and says which check
// failed, without quoting the header or a secret.
var (
	// ErrNotSigned means the request has no X-Razorpay-Signature header, or
	// an empty one.
	ErrNotSigned = fmt.Errorf("%w: razorpay: no X-Razorpay-Signature header", providers.ErrSignatureMissing)
	// ErrInvalidHeader means the header was sent more than once or is not
	// 64 hex digits.
	ErrInvalidHeader = fmt.Errorf("%w: razorpay: invalid X-Razorpay-Signature header", providers.ErrSignatureInvalid)
	// ErrNoValidSignature means the signature is not the HMAC of the body
	// under any configured secret.
	ErrNoValidSignature = fmt.Errorf("%w: razorpay: signature does not match", providers.ErrSignatureInvalid)
	// ErrTooOld means the signature matches but the event's created_at is
	// older than the adapter's max age (WithMaxAge): its record may be
	// gone, so it cannot be told from a replayed capture.
	ErrTooOld = fmt.Errorf("%w: razorpay: event created_at is too old", providers.ErrTimestamp)
)

// Verify authenticates a delivery: X-Razorpay-Signature must be the hex
// HMAC-SHA256 of the raw body under some configured secret, compared in
// constant time (Razorpay's SDK compares with !=), and, with WithMaxAge,
// the signed created_at no older than the max age. It returns nil,
// ErrNotSigned, ErrInvalidHeader, ErrNoValidSignature or ErrTooOld.
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	value, err := adapter.Header(d.Header, HeaderName, ErrNotSigned, ErrInvalidHeader)
	if err != nil {
		return err
	}
	if len(value) != 2*32 {
		return fmt.Errorf("%w (not 64 hex digits)", ErrInvalidHeader)
	}
	got, err := hex.DecodeString(value)
	if err != nil {
		return fmt.Errorf("%w (not 64 hex digits)", ErrInvalidHeader)
	}
	if !a.secrets.Match([][]byte{got}, d.Body) {
		return ErrNoValidSignature
	}
	return a.checkAge(d.Body)
}

// checkAge refuses a signed event older than maxAge. A body whose
// created_at cannot be read passes: Parse refuses it (400) with the reason.
func (a *Adapter) checkAge(body []byte) error {
	if a.maxAge <= 0 {
		return nil
	}
	o, err := rawjson.Parse(body)
	if err != nil {
		return nil
	}
	s, err := createdAt(o)
	if err != nil {
		return nil
	}
	created, err := strconv.ParseInt(s, 10, 64)
	if err != nil || a.now().Sub(time.Unix(created, 0)) > a.maxAge {
		return ErrTooOld
	}
	return nil
}
