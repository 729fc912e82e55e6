package adapter

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// Secrets is the keyed part of an adapter whose provider signs with
// HMAC-SHA256 under a list of secrets: several while one is rotated, the
// first being the one Sign uses. The zero Secrets matches nothing.
type Secrets struct {
	// Keys holds the secrets' bytes, each exactly as given, in order.
	Keys [][]byte
	// MACs holds one HMACKey per key, in the same order: Verify reuses
	// their hash states instead of building two per delivery.
	MACs []*signature.HMACKey
}

// NewSecrets checks list as Keys does and returns its Secrets.
func NewSecrets(provider, noun string, list []string) (Secrets, error) {
	keys, err := Keys(provider, noun, list)
	if err != nil {
		return Secrets{}, err
	}
	return Secrets{Keys: keys, MACs: signature.NewHMACKeys(keys)}, nil
}

// Match reports whether any of sigs is the HMAC-SHA256 of the msg parts
// under any of the secrets, as signature.MatchHMACSHA256 does.
func (s Secrets) Match(sigs [][]byte, msg ...[]byte) bool {
	return signature.MatchHMACSHA256(s.MACs, sigs, msg...)
}

// Sign returns body unchanged with the header name set to what value
// makes of the first secret, as a provider signs a fresh delivery. The zero
// Secrets has no secret to sign with; its error reads as Check's does for
// an empty list: "stripe: no signing secret configured".
func (s Secrets) Sign(provider, noun, name string, body []byte, value func(secret string) string) (providers.Delivery, error) {
	if len(s.Keys) == 0 {
		return providers.Delivery{}, errors.New(provider + ": no " + noun + " configured")
	}
	h := make(http.Header, 1)
	h.Set(name, value(string(s.Keys[0])))
	return providers.Delivery{Header: h, Body: body}, nil
}

// Window is the recency check of an adapter whose provider signs a
// timestamp: how far it may be from now, and the clock now is read on.
// The zero Window has no tolerance and so refuses every timestamp.
type Window struct {
	Tolerance time.Duration
	Clock     Clock
}

// NewWindow returns a Window of tolerance, or the error "stripe:
// tolerance must be positive, got 0s" for a tolerance that is not
// positive: the providers' documentation and libraries disagree on what 0
// means, so it is given no meaning here.
func NewWindow(provider string, tolerance time.Duration) (Window, error) {
	if tolerance <= 0 {
		return Window{}, fmt.Errorf("%s: tolerance must be positive, got %s", provider, tolerance)
	}
	return Window{Tolerance: tolerance}, nil
}

// Check returns tooOld when ts is more than the tolerance before now and,
// unless tooNew is nil, tooNew when ts is more than the tolerance after
// it. A nil tooNew accepts any future ts, as stripe-go does (see
// signature.CheckTimestamp). A Window without a positive tolerance fails
// closed: "stripe: adapter not configured", wrapping
// providers.ErrUnauthorized.
func (w Window) Check(provider string, ts time.Time, tooOld, tooNew error) error {
	now := w.Clock.Now()
	if err := signature.CheckTimestamp(ts, now, w.Tolerance); err != nil {
		if errors.Is(err, signature.ErrTooOld) {
			return tooOld
		}
		return fmt.Errorf("%w: %s: adapter not configured: %v", providers.ErrUnauthorized, provider, err)
	}
	if tooNew != nil && ts.Sub(now) > w.Tolerance {
		return tooNew
	}
	return nil
}

// WithClock returns the Option that makes the clock of an A, found by
// clock, read now instead of time.Now. A nil now is ignored.
func WithClock[A any](clock func(*A) *Clock, now func() time.Time) Option[A] {
	return func(a *A) error {
		clock(a).Set(now)
		return nil
	}
}

// Build runs opts on a and returns a, or nil and the first option's error,
// so that New never hands out a half-configured adapter.
func Build[A any](a *A, opts []Option[A]) (*A, error) {
	if err := Apply(a, opts); err != nil {
		return nil, err
	}
	return a, nil
}

// Header returns the one value of the header name: notSigned when it is
// absent or empty, and invalid, saying how many were sent, when it is sent
// more than once, since which of several copies was signed is ambiguous.
func Header(h http.Header, name string, notSigned, invalid error) (string, error) {
	values := h.Values(name)
	switch {
	case len(values) == 0 || (len(values) == 1 && values[0] == ""):
		return "", notSigned
	case len(values) > 1:
		return "", fmt.Errorf("%w (sent %d times)", invalid, len(values))
	}
	return values[0], nil
}
