package razorpay

import (
	"errors"
	"strconv"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/signature"
)

// SignatureHeader returns the X-Razorpay-Signature value Razorpay sends for
// body signed with secret.
func SignatureHeader(secret string, body []byte) string {
	return signature.HMACSHA256Hex([]byte(secret), body)
}

// Sign signs body for `webhookd replay` and tests: it returns body
// and its X-Razorpay-Signature under the first configured secret. It sets
// no x-razorpay-event-id: that header is not signed and the adapter does
// not read it. Without WithMaxAge (the default) every body is signed
// unchanged, so a fixture keeps its created_at and its event key. With
// WithMaxAge, a body whose top-level created_at is older than the max age
// (a fixture, as shipped) is re-dated to now first, or Verify would refuse
// it as ErrTooOld; its event key changes with it.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if errors.Is(a.checkAge(body), ErrTooOld) {
		body = redate(body, a.now())
	}
	return a.secrets.Sign(Name, noun, HeaderName, body, func(secret string) string {
		return SignatureHeader(secret, body)
	})
}

// redate returns a copy of body, a JSON object whose created_at is readable,
// with created_at set to now.
func redate(body []byte, now time.Time) []byte {
	o, err := rawjson.Parse(body)
	if err != nil {
		return body
	}
	m, ok, err := o.Get("created_at")
	if err != nil || !ok {
		return body
	}
	out := append([]byte{}, body[:m.Start]...)
	out = strconv.AppendInt(out, now.Unix(), 10)
	return append(out, body[m.End:]...)
}
