package paddle

import (
	"strconv"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// SignatureHeader returns the Paddle-Signature header value Paddle would send
// for body signed with secret at time t: "ts=<unix seconds>;h1=<hex>". Tests
// elsewhere use it to build signed notifications.
func SignatureHeader(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "ts=" + ts + ";h1=" + signature.HMACSHA256Hex([]byte(secret), []byte(ts+":"), body)
}

// Sign signs body for `webhookd replay` and tests: it returns body
// unchanged and a Paddle-Signature header made with the first configured
// secret and the current time, as Paddle signs a fresh delivery attempt.
func (a *Adapter) Sign(body []byte) (providers.Delivery, error) {
	return a.secrets.Sign(Name, noun, HeaderName, body, func(secret string) string {
		return SignatureHeader(secret, a.window.Clock.Now(), body)
	})
}
