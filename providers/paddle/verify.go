package paddle

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Limits on what Verify reads from a Paddle-Signature header. Paddle sends
// one timestamp and an h1 per active secret, about 90 bytes each; the limits
// only stop a crafted header from costing unbounded parsing and HMACs.
const (
	// MaxHeaderBytes is the longest Paddle-Signature header Verify parses;
	// a longer one is ErrInvalidHeader.
	MaxHeaderBytes = 4 << 10
	// MaxSignatures is how many h1 signatures Verify considers; any after
	// them are ignored.
	MaxSignatures = 16
	// maxTimestampDigits keeps ts within int64 seconds.
	maxTimestampDigits = 18
)

// Verify's errors. Each wraps providers.ErrUnauthorized, and each says which
// check failed without quoting the header, a signature or a secret.
var (
	// ErrNotSigned means the request has no Paddle-Signature header, or an
	// empty one.
	ErrNotSigned = fmt.Errorf("%w: paddle: no Paddle-Signature header", providers.ErrSignatureMissing)
	// ErrInvalidHeader means the Paddle-Signature header cannot be parsed:
	// an element is not key=value, ts is missing, given twice or not a
	// plain decimal number, or the header is longer than MaxHeaderBytes or
	// was sent more than once.
	ErrInvalidHeader = fmt.Errorf("%w: paddle: invalid Paddle-Signature header", providers.ErrSignatureInvalid)
	// ErrNoValidSignature means the header has no h1 signature, or none of
	// its h1 signatures matches the body under any configured secret.
	ErrNoValidSignature = fmt.Errorf("%w: paddle: no valid h1 signature", providers.ErrSignatureInvalid)
	// ErrTooOld means ts is older than the tolerance.
	ErrTooOld = fmt.Errorf("%w: paddle: timestamp older than the tolerance", providers.ErrTimestamp)
	// ErrTooNew means ts is further ahead of the receiver's clock than the
	// tolerance.
	ErrTooNew = fmt.Errorf("%w: paddle: timestamp ahead of the clock by more than the tolerance", providers.ErrTimestamp)
)

// Verify authenticates a notification from its Paddle-Signature header and
// raw body. It returns nil when ts is within the tolerance of now, either
// way, and some h1 is the HMAC-SHA256 of "<ts>:<body>" under some configured
// secret. Otherwise it returns ErrNotSigned, ErrInvalidHeader, ErrTooOld,
// ErrTooNew or ErrNoValidSignature, all of which wrap
// providers.ErrUnauthorized.
//
// A timestamp in the future is accepted only within the tolerance: Paddle
// signs each attempt as it sends it, so only clock skew puts a genuine one
// ahead, while a signature dated far ahead would verify, and so could be
// replayed, long after the dedupe store has forgotten its event.
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	value, err := adapter.Header(d.Header, HeaderName, ErrNotSigned, ErrInvalidHeader)
	if err != nil {
		return err
	}
	if len(value) > MaxHeaderBytes {
		return fmt.Errorf("%w (longer than %d bytes)", ErrInvalidHeader, MaxHeaderBytes)
	}
	sh, err := parseHeader(value)
	if err != nil {
		return err
	}
	// Recency first: a stale or replayed delivery costs no HMAC.
	if err := a.window.Check(Name, sh.timestamp, ErrTooOld, ErrTooNew); err != nil {
		return err
	}
	if !a.secrets.Match(sh.signatures, append([]byte(sh.ts), ':'), d.Body) {
		return ErrNoValidSignature
	}
	return nil
}

// signedHeader is what parseHeader reads from a Paddle-Signature header.
type signedHeader struct {
	// ts is the timestamp's text as sent, which is what Paddle signs, and
	// timestamp its value.
	ts        string
	timestamp time.Time
	// signatures holds the hex-decoded h1 values, at most MaxSignatures.
	signatures [][]byte
}

// parseHeader parses "ts=1671552777;h1=eb4d…;h1=…". Elements are split on
// ";" and each must be key=value with a single "="; ts must appear exactly
// once, as a decimal number without sign or leading zeros (so that the text
// Paddle signed and the number it stands for cannot differ between SDKs,
// some of which sign one and some the other); h1 values that are not 64
// hex digits are skipped (Paddle's Python SDK tests send "h1=dummy" before
// the real one); other keys are ignored (its Node SDK tests send an h2),
// and only h1 counts, so a header cannot be downgraded to another scheme.
func parseHeader(header string) (signedHeader, error) {
	var sh signedHeader
	seenTS := false
	for element := range strings.SplitSeq(header, ";") {
		if strings.Count(element, "=") != 1 {
			return sh, ErrInvalidHeader
		}
		key, value, _ := strings.Cut(element, "=")
		switch key {
		case "ts":
			if seenTS || !isDecimal(value) {
				return sh, ErrInvalidHeader
			}
			seenTS = true
			unix, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return sh, ErrInvalidHeader
			}
			sh.ts, sh.timestamp = value, time.Unix(unix, 0)
		case "h1":
			if len(sh.signatures) == MaxSignatures || len(value) != 64 {
				continue
			}
			sig, err := hex.DecodeString(value)
			if err != nil {
				continue
			}
			sh.signatures = append(sh.signatures, sig)
		}
	}
	if !seenTS {
		return sh, ErrInvalidHeader
	}
	if len(sh.signatures) == 0 {
		return sh, ErrNoValidSignature
	}
	return sh, nil
}

// isDecimal reports whether s is a decimal number of 1 to maxTimestampDigits
// digits without a leading zero.
func isDecimal(s string) bool {
	if s == "" || len(s) > maxTimestampDigits || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
