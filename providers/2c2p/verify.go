package twoctwop

import (
	"context"
	"fmt"

	"github.com/webhookd/webhookd/providers"
)

// ErrNoValidSignature means the token's signature matches no configured
// key. It wraps providers.ErrUnauthorized.
var ErrNoValidSignature = fmt.Errorf("%w: 2c2p: signature does not match", providers.ErrSignatureInvalid)

// Verify authenticates a backend response from its raw JSON body (headers
// are not read): its payload member must be a compact JWS whose header
// says alg HS256, checked first, and whose signature is the HMAC-SHA256 of
// the signing input under some configured key, compared in constant time.
// A body naming payload twice is ErrRepeatedField (providers.ErrMalformed:
// 400); every other error wraps providers.ErrUnauthorized (401).
func (a *Adapter) Verify(_ context.Context, d providers.Delivery) error {
	tok, _, err := bodyToken(d.Body)
	if err != nil {
		return err
	}
	t, err := parseToken(tok)
	if err != nil {
		return err
	}
	if !a.keys.Match([][]byte{t.sig}, []byte(t.signed)) {
		return ErrNoValidSignature
	}
	return nil
}
