package xendit

import (
	"context"
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// MaxTokenBytes is the longest x-callback-token Verify reads (and New
// accepts). Xendit's tokens are about 60 characters.
const MaxTokenBytes = 1 << 10

// Verify's errors. Each wraps providers.ErrUnauthorized, and none quotes the
// header or a token.
var (
	// ErrNoToken means the request has no x-callback-token header, or an
	// empty one.
	ErrNoToken = fmt.Errorf("%w: xendit: no x-callback-token header", providers.ErrSignatureMissing)
	// ErrInvalidHeader means x-callback-token was sent more than once or is
	// longer than MaxTokenBytes.
	ErrInvalidHeader = fmt.Errorf("%w: xendit: invalid x-callback-token header", providers.ErrSignatureInvalid)
	// ErrInvalidToken means the token matches no configured token.
	ErrInvalidToken = fmt.Errorf("%w: xendit: x-callback-token does not match", providers.ErrSignatureInvalid)
)

// Verify authenticates a callback by its x-callback-token header, which must
// equal one of the configured tokens; the body plays no part. Every
// configured token is compared, in constant time, whether or not an earlier
// one matched, so the time taken says nothing about which token matched or
// how much of it. It returns ErrNoToken, ErrInvalidHeader or
// ErrInvalidToken, all of which wrap providers.ErrUnauthorized.
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	header := d.Header
	values := header.Values(HeaderName)
	switch {
	case len(values) == 0 || (len(values) == 1 && values[0] == ""):
		return ErrNoToken
	case len(values) > 1:
		// Xendit sends one header; which of several to trust is ambiguous.
		return fmt.Errorf("%w (sent %d times)", ErrInvalidHeader, len(values))
	case len(values[0]) > MaxTokenBytes:
		return fmt.Errorf("%w (longer than %d bytes)", ErrInvalidHeader, MaxTokenBytes)
	}
	match := false
	for _, tok := range a.tokens {
		if signature.EqualString(tok, values[0]) {
			match = true
		}
	}
	if !match {
		return ErrInvalidToken
	}
	return nil
}
