package dispatch

import (
	"net/http"
	"time"
)

// MinSigningKeyBytes is the shortest signing key New accepts: HMAC-SHA256
// keys below 128 bits are guessable offline from one signed request.
const MinSigningKeyBytes = 16

// sign sets the Standard Webhooks headers on h for one attempt. Each attempt
// is signed afresh with the time it is sent, so that a retry late in the
// budget is as fresh to the core service's tolerance check as the first.
func (f *Forwarder) sign(h http.Header, req Request) {
	if f.signer == nil {
		return
	}
	f.signer.Sign(h, req.IdempotencyKey, f.now(), req.Body)
}

// now is the signing clock.
func (f *Forwarder) now() time.Time {
	if f.clock != nil {
		return f.clock()
	}
	return time.Now()
}
