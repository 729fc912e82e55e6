package dispatch

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
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

// resign is retryablehttp's PrepareRetry: it signs the retry with a new
// timestamp. retryablehttp shallow-copies the request between attempts, so
// the header map is still shared with the attempt just finished (whose
// connection may still be writing it out); it is cloned before it changes.
func (f *Forwarder) resign(req Request) func(*http.Request) error {
	return func(r *http.Request) error {
		r.Header = r.Header.Clone()
		f.sign(r.Header, req)
		return nil
	}
}

// now is the signing clock.
func (f *Forwarder) now() time.Time {
	if f.clock != nil {
		return f.clock()
	}
	return time.Now()
}

// prepareRetry returns the PrepareRetry hook for req: nil when forwards are
// not signed.
func (f *Forwarder) prepareRetry(req Request) retryablehttp.PrepareRetry {
	if f.signer == nil {
		return nil
	}
	return f.resign(req)
}
