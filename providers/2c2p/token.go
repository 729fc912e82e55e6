package twoctwop

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Algorithm is the one JWS algorithm accepted.
const Algorithm = "HS256"

// The body's and the token's errors. Each says which check failed without
// quoting the token.
var (
	// ErrNotSigned means the body is not a JSON object with a string
	// payload member, or the payload is empty. It wraps
	// providers.ErrUnauthorized.
	ErrNotSigned = fmt.Errorf("%w: 2c2p: no payload token", providers.ErrSignatureMissing)
	// ErrRepeatedField means the body names payload twice, or spells it
	// another way (compared as encoding/json matches names): which copy
	// the core service reads is ambiguous. It wraps providers.ErrMalformed
	// (400).
	ErrRepeatedField = fmt.Errorf("%w: 2c2p: the body names a member twice", providers.ErrMalformed)
	// ErrInvalidToken means the payload is not three unpadded base64url
	// segments, or its header is not a JSON object with unique names. It
	// wraps providers.ErrUnauthorized.
	ErrInvalidToken = fmt.Errorf("%w: 2c2p: payload is not a compact JWS", providers.ErrSignatureInvalid)
	// ErrAlgorithm means the header's alg is not exactly HS256 ("none"
	// included), or the header has crit. It wraps
	// providers.ErrUnauthorized.
	ErrAlgorithm = fmt.Errorf("%w: 2c2p: the token's alg is not "+Algorithm, providers.ErrSignatureInvalid)
)

// b64 is base64url without padding, refusing non-zero trailing bits, so
// that one signature or header has one spelling.
var b64 = base64.RawURLEncoding.Strict()

// token is a payload split into its segments: signed is the JWS signing
// input (header "." claims), claims and sig the decoded claims and
// signature.
type token struct {
	signed string
	claims []byte
	sig    []byte
}

// bodyToken returns the payload member of a body and where its value (the
// quoted string) lies in the body.
func bodyToken(body []byte) (tok string, m rawjson.Member, err error) {
	o, err := rawjson.Parse(body)
	if errors.Is(err, rawjson.ErrDuplicate) || errors.Is(err, rawjson.ErrVariant) {
		return "", m, ErrRepeatedField
	}
	if err != nil {
		return "", m, fmt.Errorf("%w (not a JSON object)", ErrNotSigned)
	}
	m, _, err = o.Get(FieldPayload)
	if err != nil {
		return "", m, ErrRepeatedField
	}
	tok, ok, err := o.String(FieldPayload)
	if err != nil || !ok || tok == "" {
		return "", m, ErrNotSigned
	}
	return tok, m, nil
}

// parseToken splits tok and checks its header: it must be strict compact
// serialization, and alg HS256, before any signature is computed.
func parseToken(tok string) (token, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return token{}, fmt.Errorf("%w (not three segments)", ErrInvalidToken)
	}
	header, err := b64.DecodeString(parts[0])
	if err != nil || len(header) == 0 {
		return token{}, fmt.Errorf("%w (header is not base64url)", ErrInvalidToken)
	}
	// The algorithm first: an unsigned ("none", empty signature) or
	// otherwise signed token is refused as such, whatever follows.
	if err := checkHeader(header); err != nil {
		return token{}, err
	}
	if parts[1] == "" || parts[2] == "" {
		return token{}, fmt.Errorf("%w (an empty segment)", ErrInvalidToken)
	}
	claims, err := b64.DecodeString(parts[1])
	if err != nil {
		return token{}, fmt.Errorf("%w (claims are not base64url)", ErrInvalidToken)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return token{}, fmt.Errorf("%w (signature is not base64url)", ErrInvalidToken)
	}
	return token{signed: parts[0] + "." + parts[1], claims: claims, sig: sig}, nil
}

// checkHeader requires a JOSE header whose alg is exactly HS256 and that
// has no crit: an extension this adapter does not implement must be
// refused (RFC 7515, section 4.1.11).
func checkHeader(header []byte) error {
	h, err := rawjson.Parse(header)
	if err != nil {
		return fmt.Errorf("%w (header is not a JSON object with unique names)", ErrInvalidToken)
	}
	alg, ok, err := h.String("alg")
	if err != nil || !ok || alg != Algorithm {
		return ErrAlgorithm
	}
	if _, crit, err := h.Get("crit"); crit || err != nil {
		return fmt.Errorf("%w (crit)", ErrAlgorithm)
	}
	return nil
}
