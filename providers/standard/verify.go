package standard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// MaxSignatureHeaderBytes bounds the webhook-signature list Verify reads: a
// sender lists one signature (about 50 bytes) per active secret, and a
// forged header must not cost thousands of decodes and comparisons.
const MaxSignatureHeaderBytes = 4096

// Verify's errors. Each wraps providers.ErrUnauthorized and says which check
// failed, without quoting a header, a signature or a secret.
var (
	// ErrNotSigned means webhook-id, webhook-timestamp or webhook-signature
	// (under either set of names) is missing or empty.
	ErrNotSigned = fmt.Errorf("%w: standard: webhook-id, webhook-timestamp or webhook-signature missing", providers.ErrSignatureMissing)
	// ErrInvalidHeader means a header is present but unusable: an id or
	// timestamp sent twice, a webhook- and a svix- header that disagree, a
	// timestamp that is not unix seconds, a signature list longer than
	// MaxSignatureHeaderBytes.
	ErrInvalidHeader = fmt.Errorf("%w: standard: invalid signature header", providers.ErrSignatureInvalid)
	// ErrTooOld means the timestamp is more than the tolerance in the past.
	ErrTooOld = fmt.Errorf("%w: standard: timestamp older than tolerance", providers.ErrTimestamp)
	// ErrTooNew means the timestamp is more than the tolerance in the
	// future.
	ErrTooNew = fmt.Errorf("%w: standard: timestamp further ahead than tolerance", providers.ErrTimestamp)
	// ErrNoValidSignature means no v1 signature in the list matches the
	// delivery under any configured secret.
	ErrNoValidSignature = fmt.Errorf("%w: standard: no valid v1 signature", providers.ErrSignatureInvalid)
)

// Verify authenticates a delivery: the timestamp is within the tolerance of
// now (either way), checked before any HMAC, and some v1 signature is the
// HMAC-SHA256 of "id.timestamp.body" under some configured secret. It
// returns nil or one of the errors above.
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	header, body := d.Header, d.Body
	m, err := readHeaders(header)
	if err != nil {
		return err
	}
	switch err := signature.CheckWebhookTimestamp(m.timestamp, a.window.Clock.Now(), a.window.Tolerance); {
	case err == nil:
	case errors.Is(err, signature.ErrTooOld):
		return ErrTooOld
	case errors.Is(err, signature.ErrTooNew):
		return ErrTooNew
	case errors.Is(err, signature.ErrInvalidTolerance):
		// Only the zero Adapter has no positive tolerance: fail closed.
		return fmt.Errorf("%w: standard: adapter not configured", providers.ErrUnauthorized)
	default:
		return fmt.Errorf("%w (timestamp is not unix seconds)", ErrInvalidHeader)
	}
	if signature.MatchWebhookSignature(m.signatures, a.keys, m.id, m.timestamp, body) {
		return nil
	}
	return ErrNoValidSignature
}

// message is what a delivery's headers say about it.
type message struct {
	id, timestamp, signatures string
}

// readHeaders reads the three headers, each under its webhook- or svix-
// name. Verify and Parse both read them here, so the id that is
// keyed is the id whose signature was checked.
func readHeaders(h http.Header) (message, error) {
	var m message
	var err error
	if m.id, err = one(h, HeaderID, HeaderSvixID); err != nil {
		return m, err
	}
	if m.timestamp, err = one(h, HeaderTimestamp, HeaderSvixTimestamp); err != nil {
		return m, err
	}
	std, svix := list(h, HeaderSignature), list(h, HeaderSvixSignature)
	switch {
	case std != "" && svix != "" && std != svix:
		return m, fmt.Errorf("%w (%s and %s differ)", ErrInvalidHeader, HeaderSignature, HeaderSvixSignature)
	case std != "":
		m.signatures = std
	default:
		m.signatures = svix
	}
	switch {
	case m.signatures == "":
		return m, ErrNotSigned
	case len(m.signatures) > MaxSignatureHeaderBytes:
		return m, fmt.Errorf("%w (signature list longer than %d bytes)", ErrInvalidHeader, MaxSignatureHeaderBytes)
	}
	return m, nil
}

// one returns the value of a header sent under std, svix or both: sent at
// most once under each name, and the same under both.
func one(h http.Header, std, svix string) (string, error) {
	a, err := single(h, std)
	if err != nil {
		return "", err
	}
	b, err := single(h, svix)
	switch {
	case err != nil:
		return "", err
	case a != "" && b != "" && a != b:
		return "", fmt.Errorf("%w (%s and %s differ)", ErrInvalidHeader, std, svix)
	case a != "":
		return a, nil
	case b != "":
		return b, nil
	}
	return "", ErrNotSigned
}

func single(h http.Header, name string) (string, error) {
	values := h.Values(name)
	switch len(values) {
	case 0:
		return "", nil
	case 1:
		return values[0], nil
	}
	return "", fmt.Errorf("%w (%s sent %d times)", ErrInvalidHeader, name, len(values))
}

// list joins the lines of a signature header with spaces (a list may be
// split over several header lines) and trims it; blank means absent.
func list(h http.Header, name string) string {
	return strings.TrimSpace(strings.Join(h.Values(name), " "))
}
