package stripe

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

// Limits on what Verify reads from a Stripe-Signature header. Stripe sends one
// timestamp and one v1 signature per active secret (two during a rotation),
// so real headers are about 150 bytes; the limits only stop a crafted header
// from costing unbounded parsing and comparisons.
const (
	// MaxHeaderBytes is the longest Stripe-Signature header Verify parses;
	// a longer one is ErrInvalidHeader.
	MaxHeaderBytes = 8 << 10
	// MaxSignatures is how many v1 signatures Verify considers; any after
	// them are ignored.
	MaxSignatures = 16
)

// Verify's errors. Each wraps providers.ErrUnauthorized, and each says which
// check failed without quoting the header, a signature or a secret.
var (
	// ErrNotSigned means the request has no Stripe-Signature header, or an
	// empty one.
	ErrNotSigned = fmt.Errorf("%w: stripe: no Stripe-Signature header", providers.ErrSignatureMissing)
	// ErrInvalidHeader means the Stripe-Signature header cannot be parsed:
	// an element is not key=value, the timestamp is not an integer, the
	// header is longer than MaxHeaderBytes or was sent more than once.
	ErrInvalidHeader = fmt.Errorf("%w: stripe: invalid Stripe-Signature header", providers.ErrSignatureInvalid)
	// ErrNoValidSignature means the header has no v1 signature, or none of
	// its v1 signatures matches the body under any configured secret.
	ErrNoValidSignature = fmt.Errorf("%w: stripe: no valid v1 signature", providers.ErrSignatureInvalid)
	// ErrTooOld means the header's timestamp is older than the tolerance
	// (a header without a timestamp counts as infinitely old, as in
	// stripe-go).
	ErrTooOld = fmt.Errorf("%w: stripe: timestamp outside tolerance", providers.ErrTimestamp)
)

// Verify authenticates a delivery from its Stripe-Signature header and raw
// body. It returns nil when the timestamp is within the tolerance and some v1
// signature is the HMAC-SHA256 of "<t>.<body>" under some configured secret.
// Otherwise it returns ErrNotSigned, ErrInvalidHeader, ErrTooOld or
// ErrNoValidSignature, all of which wrap providers.ErrUnauthorized.
//
// Timestamps in the future are accepted, as in stripe-go: see
// signature.CheckTimestamp.
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
	if err := a.window.Check(Name, sh.timestamp, ErrTooOld, nil); err != nil {
		return err
	}
	if !a.secrets.Match(sh.signatures, signedPrefix(sh.timestamp), d.Body) {
		return ErrNoValidSignature
	}
	return nil
}

// signedHeader is what parseHeader reads from a Stripe-Signature header.
type signedHeader struct {
	// timestamp is the zero Time when the header has no t element.
	timestamp time.Time
	// signatures holds the hex-decoded v1 values, at most MaxSignatures.
	signatures [][]byte
}

// parseHeader parses "t=1492774577,v1=5257…,v1=…,v0=…" with stripe-go's rules,
// so that a header means the same here as in Stripe's own library: split on
// ",", each element must split on "=" into exactly two parts, t must be a
// base-10 integer (the last t wins), v1 values that are not hex are skipped,
// every other key (v0, unknown schemes, " v1" after a space) is ignored, and
// a header without any v1 has no valid signature.
func parseHeader(header string) (signedHeader, error) {
	var sh signedHeader
	for element := range strings.SplitSeq(header, ",") {
		if strings.Count(element, "=") != 1 {
			return sh, ErrInvalidHeader
		}
		key, value, _ := strings.Cut(element, "=")
		switch key {
		case "t":
			unix, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return sh, ErrInvalidHeader
			}
			sh.timestamp = time.Unix(unix, 0)
		case "v1":
			if len(sh.signatures) == MaxSignatures {
				continue
			}
			sig, err := hex.DecodeString(value)
			if err != nil {
				continue
			}
			sh.signatures = append(sh.signatures, sig)
		}
	}
	if len(sh.signatures) == 0 {
		return sh, ErrNoValidSignature
	}
	return sh, nil
}

// signedPrefix is what Stripe signs before the body: the timestamp in decimal
// seconds and a dot. Like stripe-go it formats the parsed timestamp, so the
// header's "t=" text itself is not what is signed.
func signedPrefix(t time.Time) []byte {
	return append(strconv.AppendInt(nil, t.Unix(), 10), '.')
}
