package twoctwop

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// signedHeader is base64url({"alg":"HS256","typ":"JWT"}), the header of
// 2C2P's tokens and of the ones Sign makes.
const signedHeader = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

// ErrCannotSignFixture means Sign was given a body whose payload is not a
// token of three segments with readable claims.
var ErrCannotSignFixture = errors.New("2c2p: the body's payload is not a token whose claims can be signed again")

// Sign signs body for `webhookd replay` and tests as 2C2P would with the
// first key: the claims segment of the body's payload token, as it is, is
// signed again under the header {"alg":"HS256","typ":"JWT"}, and the
// payload member's value is replaced by the new token, every other byte of
// the body as it was (docs/contract.md, "Fixtures").
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if len(a.keys.Keys) == 0 {
		return providers.Delivery{}, errors.New("2c2p: no " + keyNoun + " configured")
	}
	tok, m, err := bodyToken(body)
	if err != nil {
		return providers.Delivery{}, err
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[1] == "" {
		return providers.Delivery{}, ErrCannotSignFixture
	}
	if _, err := b64.DecodeString(parts[1]); err != nil {
		return providers.Delivery{}, ErrCannotSignFixture
	}
	signed := signedHeader + "." + parts[1]
	sig := base64.RawURLEncoding.EncodeToString(signature.HMACSHA256(a.keys.Keys[0], []byte(signed)))
	out := make([]byte, 0, len(body)+len(sig))
	out = append(out, body[:m.Start]...)
	out = append(out, `"`+signed+"."+sig+`"`...)
	out = append(out, body[m.End:]...)
	h := make(http.Header, 1)
	h.Set("Content-Type", ContentType)
	return providers.Delivery{Header: h, Body: out}, nil
}
