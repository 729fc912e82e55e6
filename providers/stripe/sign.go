package stripe

import (
	"errors"
	"net/http"
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
	if len(a.secrets) == 0 {
		return providers.Delivery{}, errors.New("stripe: no signing secret configured")
	}
	h := make(http.Header, 1)
	h.Set(HeaderName, SignatureHeader(string(a.secrets[0]), a.clock.Now(), body))
	return providers.Delivery{Header: h, Body: body}, nil
}
