package webhookverify

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
const SecretPrefix = "whsec_"

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
// whsec_ secret, or the bytes of any other non-empty string.
func DecodeSecret(secret string) ([]byte, error) {
	rest, prefixed := strings.CutPrefix(secret, SecretPrefix)
	if !prefixed {
		if secret == "" {
			return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
		}
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		// The decoder's error quotes an offset into the secret; say less.
		return nil, fmt.Errorf("%w: the part after %s is not standard base64", ErrInvalidSecret, SecretPrefix)
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: empty key after %s", ErrInvalidSecret, SecretPrefix)
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
	want := mac(key, id, ts, body)
	for _, candidate := range strings.Fields(list) {
		version, encoded, ok := strings.Cut(candidate, ",")
		// Other versions (v1a is the asymmetric scheme) are skipped, as the
		// specification asks, so a sender may add them.
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			continue
		}
		if signature.Equal(got, want) {
			return nil
		}
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

func checkTimestamp(ts string, now time.Time, tolerance time.Duration) error {
	// Digits only: ParseInt alone would also take "+12" or "-0".
	if len(ts) > 19 || strings.TrimLeft(ts, "0123456789") != "" {
		return fmt.Errorf("%w: %s is not unix seconds", ErrInvalidHeader, HeaderTimestamp)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not unix seconds", ErrInvalidHeader, HeaderTimestamp)
	}
	// Sub saturates instead of overflowing, so an absurd value still
	// compares as too old or too new.
	at := time.Unix(secs, 0)
	if age := now.Sub(at); age > tolerance {
		return fmt.Errorf("%w (age %s, tolerance %s)", ErrTooOld, age.Round(time.Second), tolerance)
	}
	if ahead := at.Sub(now); ahead > tolerance {
		return fmt.Errorf("%w (ahead by %s, tolerance %s)", ErrTooNew, ahead.Round(time.Second), tolerance)
	}
	return nil
}

// mac is the v1 signature's raw bytes: HMAC-SHA256 of "id.timestamp.body".
// The body is passed as a part, not copied.
func mac(key []byte, id, ts string, body []byte) []byte {
	return signature.HMACSHA256(key, []byte(id), []byte("."), []byte(ts), []byte("."), body)
}
