package stripe

import (
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Name is the adapter's route segment and event key prefix.
const Name = "stripe"

// noun is what Stripe calls one secret, for the errors about them.
const noun = "signing secret"

// HeaderName is the request header that carries Stripe's signatures.
const HeaderName = "Stripe-Signature"

// DefaultTolerance is how old a signature's timestamp may be by default, the
// same five minutes as Stripe's own libraries.
const DefaultTolerance = 5 * time.Minute

// Adapter verifies and parses Stripe webhook deliveries. Build one with New;
// an Adapter is safe for concurrent use. The zero value verifies nothing: it
// rejects every delivery.
type Adapter struct {
	secrets adapter.Secrets
	window  adapter.Window
}

var (
	_ providers.Provider = (*Adapter)(nil)
)

// Option configures an Adapter built by New.
type Option = adapter.Option[Adapter]

// WithClock makes the Adapter read the current time from now instead of
// time.Now, for the tolerance check and for Sign. Tests use it to pin the
// clock next to a fixed signing vector. A nil now is ignored.
func WithClock(now func() time.Time) Option {
	return adapter.WithClock(func(a *Adapter) *adapter.Clock { return &a.window.Clock }, now)
}

// New returns an Adapter that accepts deliveries signed with any of secrets
// (more than one while a secret is being rolled) whose timestamp is at most
// tolerance old. Sign uses the first secret.
//
// Each secret is used exactly as given, whsec_ prefix included. New refuses
// an empty list, an empty secret and a secret with surrounding white space
// (almost always a stray space after a comma in the configuration, which
// would otherwise fail every delivery), and a tolerance that is not positive:
// Stripe's documentation and stripe-go disagree on what a tolerance of 0
// means, so it is not given a meaning here.
func New(secrets []string, tolerance time.Duration, opts ...Option) (*Adapter, error) {
	s, err := adapter.NewSecrets(Name, noun, secrets)
	if err != nil {
		return nil, err
	}
	w, err := adapter.NewWindow(Name, tolerance)
	if err != nil {
		return nil, err
	}
	return adapter.Build(&Adapter{secrets: s, window: w}, opts)
}

// Name returns "stripe".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, a.event)
}
