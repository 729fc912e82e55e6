package razorpay

import (
	"errors"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// Name is the adapter's route segment and event key prefix.
const Name = "razorpay"

// HeaderName is the request header that carries Razorpay's signature.
const HeaderName = "X-Razorpay-Signature"

// EventIDHeader is Razorpay's event id header. It is not signed, so the
// adapter does not read it.
const EventIDHeader = "X-Razorpay-Event-Id"

// Adapter verifies and parses Razorpay webhook deliveries. Build one with
// New; an Adapter is safe for concurrent use. The zero value verifies
// nothing: it rejects every delivery.
type Adapter struct {
	secrets [][]byte
}

var (
	_ providers.Provider = (*Adapter)(nil)
	_ providers.Signer   = (*Adapter)(nil)
)

// New returns an Adapter that accepts deliveries signed with any of secrets
// (the current webhook secret and, for a day after a rotation, the old
// one). Sign uses the first. New refuses an empty list, an empty secret and
// one with surrounding white space (almost always a stray space after a
// comma, which would fail every delivery).
func New(secrets []string) (*Adapter, error) {
	if len(secrets) == 0 {
		return nil, errors.New("razorpay: no webhook secret configured")
	}
	a := &Adapter{secrets: make([][]byte, 0, len(secrets))}
	for i, s := range secrets {
		switch {
		case s == "":
			return nil, fmt.Errorf("razorpay: webhook secret %d of %d is empty", i+1, len(secrets))
		case strings.TrimSpace(s) != s:
			return nil, fmt.Errorf("razorpay: webhook secret %d of %d has leading or trailing white space", i+1, len(secrets))
		}
		a.secrets = append(a.secrets, []byte(s))
	}
	return a, nil
}

// Name returns "razorpay".
func (a *Adapter) Name() string { return Name }
