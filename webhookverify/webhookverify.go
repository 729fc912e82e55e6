package webhookverify

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/webhookd/webhookd/signature"
)

// Header names, in Go's canonical form (HTTP header names are
// case-insensitive; the specification writes them in lower case).
const (
	HeaderID        = "Webhook-Id"
	HeaderTimestamp = "Webhook-Timestamp"
	HeaderSignature = "Webhook-Signature"
)

// SecretPrefix marks a base64-encoded secret.
const SecretPrefix = signature.WebhookSecretPrefix

// DefaultTolerance is how far a timestamp may be from the verifier's clock,
// either way, as the Standard Webhooks reference libraries allow.
const DefaultTolerance = 5 * time.Minute

// MaxSignatureHeaderBytes bounds the webhook-signature header Verify reads,
// so that a forged header cannot make it spend time on thousands of
// candidate signatures.
const MaxSignatureHeaderBytes = 4096

// Errors of Verify and of NewSigner. Test them with errors.Is; the returned
// errors may add detail (which header, how old), never secret material.
var (
	// ErrInvalidSecret means the secret is empty, or starts with whsec_ and
	// the rest is not standard base64.
	ErrInvalidSecret = errors.New("webhookverify: invalid secret")
	// ErrInvalidTolerance means the tolerance is zero or negative; Verify
	// fails closed rather than guess what was meant.
	ErrInvalidTolerance = errors.New("webhookverify: tolerance must be positive")
	// ErrNotSigned means webhook-id, webhook-timestamp or webhook-signature
	// is missing.
	ErrNotSigned = errors.New("webhookverify: request not signed")
	// ErrInvalidHeader means a header is present but unusable: a repeated
	// id or timestamp, a timestamp that is not unix seconds, an oversized
	// signature list.
	ErrInvalidHeader = errors.New("webhookverify: invalid header")
	// ErrTooOld means the timestamp is older than the tolerance: the
	// request may be a replay of a captured one.
	ErrTooOld = errors.New("webhookverify: timestamp older than tolerance")
	// ErrTooNew means the timestamp is further in the future than the
	// tolerance.
	ErrTooNew = errors.New("webhookverify: timestamp too far in the future")
	// ErrNoValidSignature means no v1 signature in the list matches the
	// body under the secret.
	ErrNoValidSignature = errors.New("webhookverify: no valid v1 signature")
)

// DecodeSecret returns the HMAC key of secret: the base64-decoded rest of a
// whsec_ secret (signature.DecodeWebhookSecret), or the bytes of any other
// non-empty string.
func DecodeSecret(secret string) ([]byte, error) {
	if !strings.HasPrefix(secret, SecretPrefix) {
		if secret == "" {
			return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
		}
		return []byte(secret), nil
	}
	key, err := signature.DecodeWebhookSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSecret, err)
	}
	return key, nil
}

// Verify checks that header and body carry a valid Standard Webhooks
// signature under secret, made less than tolerance ago (and not more than
// tolerance ahead, for a fast clock). body must be the raw request body,
// byte for byte. It returns nil or an error wrapping one of the package's
// sentinel errors.
func Verify(secret string, header http.Header, body []byte, tolerance time.Duration) error {
	return verify(secret, header, body, tolerance, time.Now())
}

func verify(secret string, header http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	if tolerance <= 0 {
		return ErrInvalidTolerance
	}
	key, err := DecodeSecret(secret)
	if err != nil {
		return err
	}
	id, err := single(header, HeaderID)
	if err != nil {
		return err
	}
	ts, err := single(header, HeaderTimestamp)
	if err != nil {
		return err
	}
	sigs := header.Values(HeaderSignature)
	if len(sigs) == 0 || strings.TrimSpace(strings.Join(sigs, "")) == "" {
		return fmt.Errorf("%w: no %s header", ErrNotSigned, HeaderSignature)
	}
	list := strings.Join(sigs, " ")
	if len(list) > MaxSignatureHeaderBytes {
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalidHeader, HeaderSignature, MaxSignatureHeaderBytes)
	}
	if err := checkTimestamp(ts, now, tolerance); err != nil {
		return err
	}
	if signature.MatchWebhookSignature(list, [][]byte{key}, id, ts, body) {
		return nil
	}
	return ErrNoValidSignature
}

// single returns the one value of header name.
func single(h http.Header, name string) (string, error) {
	values := h.Values(name)
	switch {
	case len(values) == 0 || values[0] == "":
		return "", fmt.Errorf("%w: no %s header", ErrNotSigned, name)
	case len(values) > 1:
		return "", fmt.Errorf("%w: %s sent %d times", ErrInvalidHeader, name, len(values))
	}
	return values[0], nil
}

// checkTimestamp maps signature.CheckWebhookTimestamp's errors to this
// package's.
func checkTimestamp(ts string, now time.Time, tolerance time.Duration) error {
	err := signature.CheckWebhookTimestamp(ts, now, tolerance)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, signature.ErrTooOld):
		return fmt.Errorf("%w: %w", ErrTooOld, err)
	case errors.Is(err, signature.ErrTooNew):
		return fmt.Errorf("%w: %w", ErrTooNew, err)
	case errors.Is(err, signature.ErrInvalidTolerance):
		return ErrInvalidTolerance
	}
	return fmt.Errorf("%w: %s is not unix seconds", ErrInvalidHeader, HeaderTimestamp)
}
