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
// (a fixture, as shipped) is re-dated first, or Verify would refuse it as
// ErrTooOld; its event key changes with it (see redate).
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	if errors.Is(a.checkAge(body), ErrTooOld) {
		body = redate(body, a.now(), a.maxAge)
	}
	return a.secrets.Sign(Name, noun, HeaderName, body, func(secret string) string {
		return SignatureHeader(secret, body)
	})
}

// redate returns a copy of body, a JSON object whose created_at is
// readable, with created_at moved forward by whole multiples of half of
// maxAge to within that half of now. A replay then keeps one event key for
// a fixture (created_at is part of it) over that half, so that sending the
// fixtures twice is answered as a replay the second time, rather than a
// new key each second as re-dating to now would give.
func redate(body []byte, now time.Time, maxAge time.Duration) []byte {
	o, err := rawjson.Parse(body)
	if err != nil {
		return body
	}
	m, ok, err := o.Get("created_at")
	if err != nil || !ok {
		return body
	}
	created, err := strconv.ParseInt(string(m.Value), 10, 64)
	if err != nil {
		return body
	}
	step := max(int64(maxAge/time.Second)/2, 1)
	if age := now.Unix() - created; age > 0 {
		created += age / step * step
	}
	out := append([]byte{}, body[:m.Start]...)
	out = strconv.AppendInt(out, created, 10)
	return append(out, body[m.End:]...)
}
