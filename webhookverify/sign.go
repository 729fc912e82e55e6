package webhookverify

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/webhookd/webhookd/signature"
)

// Signer signs requests in the format Verify checks. webhookd's dispatch
// package signs every forward with one; the core service's tests can use one
// to build signed requests. It is safe for concurrent use.
type Signer struct {
	keys [][]byte
}

// NewSigner returns a Signer that signs with every one of secrets (see
// DecodeSecret), in order: during a rotation, give it the new and the old
// secret, and a verifier holding either accepts the request.
func NewSigner(secrets ...string) (*Signer, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no secret", ErrInvalidSecret)
	}
	s := &Signer{keys: make([][]byte, 0, len(secrets))}
	for i, secret := range secrets {
		key, err := DecodeSecret(secret)
		if err != nil {
			return nil, fmt.Errorf("secret %d of %d: %w", i+1, len(secrets), err)
		}
		s.keys = append(s.keys, key)
	}
	return s, nil
}

// MinKeyBytes returns the length of the shortest key, so that a caller can
// refuse weak secrets.
func (s *Signer) MinKeyBytes() int {
	n := len(s.keys[0])
	for _, k := range s.keys[1:] {
		n = min(n, len(k))
	}
	return n
}

// Sign sets webhook-id to id, webhook-timestamp to ts in unix seconds, and
// webhook-signature to one v1 signature per secret, space-separated, over
// id, timestamp and body.
func (s *Signer) Sign(h http.Header, id string, ts time.Time, body []byte) {
	unix := strconv.FormatInt(ts.Unix(), 10)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, unix)
	h.Set(HeaderSignature, signature.WebhookSignatures(s.keys, id, unix, body))
}
