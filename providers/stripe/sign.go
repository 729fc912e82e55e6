package stripe

import (
	"strconv"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// SignatureHeader returns the Stripe-Signature header value Stripe would send
// for body signed with secret at time t: "t=<unix seconds>,v1=<hex>". Tests
// elsewhere use it to build signed deliveries.
func SignatureHeader(secret string, t time.Time, body []byte) string {
	v1 := signature.HMACSHA256Hex([]byte(secret), signedPrefix(t), body)
	return "t=" + strconv.FormatInt(t.Unix(), 10) + ",v1=" + v1
}

// Sign signs body for `webhookd replay` and tests: it returns body
// unchanged and a Stripe-Signature header made with the first configured
// secret and the current time, as Stripe signs a fresh delivery attempt.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	return a.secrets.Sign(Name, noun, HeaderName, body, func(secret string) string {
		return SignatureHeader(secret, a.window.Clock.Now(), body)
	})
}
