package doku

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// maxHeaderBytes bounds each header Verify reads. DOKU documents Request-Id
// as at most 128 characters; the others are shorter.
const maxHeaderBytes = 256

// signaturePrefix is what DOKU puts before the base64 HMAC in Signature.
const signaturePrefix = "HMACSHA256="

// Verify's errors. Each wraps providers.ErrUnauthorized, and none quotes a
// header, a signature or a secret key.
var (
	// ErrNotSigned means one of Client-Id, Request-Id, Request-Timestamp
	// and Signature is missing or empty.
	ErrNotSigned = fmt.Errorf("%w: doku: Client-Id, Request-Id, Request-Timestamp or Signature missing", providers.ErrSignatureMissing)
	// ErrInvalidHeader means one of those headers was sent more than once,
	// is longer than 256 bytes or holds a space or control character (which
	// could forge a line of the signature component), Request-Timestamp is
	// not an RFC 3339 time, or Signature does not start with HMACSHA256=.
	ErrInvalidHeader = fmt.Errorf("%w: doku: invalid notification header", providers.ErrSignatureInvalid)
	// ErrWrongClient means Client-Id is not the configured client id: the
	// notification is for another DOKU account.
	ErrWrongClient = fmt.Errorf("%w: doku: Client-Id is not ours", providers.ErrAccountNotAllowed)
	// ErrTooOld means Request-Timestamp is older than the tolerance.
	ErrTooOld = fmt.Errorf("%w: doku: Request-Timestamp older than the tolerance", providers.ErrTimestamp)
	// ErrTooNew means Request-Timestamp is further ahead of the receiver's
	// clock than the tolerance.
	ErrTooNew = fmt.Errorf("%w: doku: Request-Timestamp ahead of the clock by more than the tolerance", providers.ErrTimestamp)
	// ErrNoValidSignature means Signature is not the HMAC of the signature
	// component under any configured secret key.
	ErrNoValidSignature = fmt.Errorf("%w: doku: signature does not match", providers.ErrSignatureInvalid)
)

// Verify authenticates a notification from its Client-Id, Request-Id,
// Request-Timestamp and Signature headers and its raw body; the request's
// own path plays no part (see WithNotificationPath). It returns nil when
// Client-Id is ours, Request-Timestamp is within the tolerance of now,
// either way, and Signature is "HMACSHA256=" and the base64 HMAC-SHA256 of
// the signature component under some configured secret key. Otherwise it
// returns ErrNotSigned, ErrInvalidHeader, ErrWrongClient, ErrTooOld,
// ErrTooNew or ErrNoValidSignature, all of which wrap
// providers.ErrUnauthorized.
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	header, body := d.Header, d.Body
	var values [4]string
	for i, name := range [...]string{HeaderClientID, HeaderRequestID, HeaderTimestamp, HeaderSignature} {
		v, err := single(header, name)
		if err != nil {
			return err
		}
		values[i] = v
	}
	clientID, requestID, timestamp, sigHeader := values[0], values[1], values[2], values[3]
	if a.clientID == "" {
		return ErrWrongClient
	}
	sig, ok := strings.CutPrefix(sigHeader, signaturePrefix)
	if !ok {
		return fmt.Errorf("%w (Signature has no %s prefix)", ErrInvalidHeader, signaturePrefix)
	}
	ts, err := time.Parse(time.RFC3339, timestamp)
	if err != nil {
		return fmt.Errorf("%w (Request-Timestamp is not an RFC 3339 time)", ErrInvalidHeader)
	}
	// Recency before any HMAC: a stale or replayed notification costs none.
	if err := a.window.Check(Name, ts, ErrTooOld, ErrTooNew); err != nil {
		return err
	}
	got, err := base64.StdEncoding.Strict().DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return ErrNoValidSignature
	}
	component := Component(clientID, requestID, timestamp, a.target, body)
	if !a.secrets.Match([][]byte{got}, component) {
		return ErrNoValidSignature
	}
	// The client is checked once the signature holds, so that a refusal
	// for it is of a genuine notification (its key is logged).
	if !signature.EqualString(clientID, a.clientID) {
		return ErrWrongClient
	}
	return nil
}

// Component returns DOKU's non-SNAP signature component for a notification
// with these headers and body, as received by the notification path target:
// five "Name:value" lines joined by "\n", without a trailing newline, the
// last one the base64 SHA-256 of the raw body.
func Component(clientID, requestID, timestamp, target string, body []byte) []byte {
	digest := sha256.Sum256(body)
	var b strings.Builder
	b.Grow(128 + len(clientID) + len(requestID) + len(timestamp) + len(target))
	b.WriteString("Client-Id:" + clientID)
	b.WriteString("\nRequest-Id:" + requestID)
	b.WriteString("\nRequest-Timestamp:" + timestamp)
	b.WriteString("\nRequest-Target:" + target)
	b.WriteString("\nDigest:" + base64.StdEncoding.EncodeToString(digest[:]))
	return []byte(b.String())
}

// single returns the one value of the header name. DOKU sends each header
// once; which of several copies it signed would be ambiguous.
func single(header http.Header, name string) (string, error) {
	values := header.Values(name)
	switch {
	case len(values) == 0 || (len(values) == 1 && values[0] == ""):
		return "", ErrNotSigned
	case len(values) > 1:
		return "", fmt.Errorf("%w (%s sent %d times)", ErrInvalidHeader, name, len(values))
	case !isHeaderValue(values[0], maxHeaderBytes):
		return "", fmt.Errorf("%w (%s is too long or holds a space or control character)", ErrInvalidHeader, name)
	}
	return values[0], nil
}

// isHeaderValue reports whether s is 1 to max bytes of printable ASCII
// without spaces: nothing that could end one line of the signature
// component and start another.
func isHeaderValue(s string, max int) bool {
	return providers.IsToken(s, max)
}
