package razorpay

import (
	"errors"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Name is the adapter's route segment and event key prefix.
const Name = "razorpay"

// noun is what Razorpay calls one secret, for the errors about them.
const noun = "webhook secret"

// HeaderName is the request header that carries Razorpay's signature.
const HeaderName = "X-Razorpay-Signature"

// EventIDHeader is Razorpay's event id header. It is not signed, so the
// adapter does not read it.
const EventIDHeader = "X-Razorpay-Event-Id"

// Adapter verifies and parses Razorpay webhook deliveries. Build one with
// New; an Adapter is safe for concurrent use. The zero value verifies
// nothing: it rejects every delivery.
type Adapter struct {
	secrets adapter.Secrets
	// maxAge, when positive, is the oldest created_at Verify accepts,
	// read on now.
	maxAge time.Duration
	now    func() time.Time
}

// Option configures an Adapter.
type Option = adapter.Option[Adapter]

// WithMaxAge refuses (ErrTooOld) an event whose signed created_at is more
// than maxAge before now. Set it under the dedupe store's retention: an
// event older than that may have had its record pruned, and a captured
// delivery of it would be forwarded again. Razorpay retries for 24 hours
// after created_at, so maxAge must exceed that for retries to get through.
func WithMaxAge(maxAge time.Duration, now func() time.Time) Option {
	return func(a *Adapter) error {
		if maxAge <= 0 || now == nil {
			return errors.New("razorpay: max age must be positive, with a clock")
		}
		a.maxAge, a.now = maxAge, now
		return nil
	}
}

var (
	_ providers.Provider = (*Adapter)(nil)
)

// New returns an Adapter that accepts deliveries signed with any of secrets
// (the current webhook secret and, for a day after a rotation, the old
// one). Sign uses the first. New refuses an empty list, an empty secret and
// one with surrounding white space (almost always a stray space after a
// comma, which would fail every delivery).
func New(secrets []string, opts ...Option) (*Adapter, error) {
	s, err := adapter.NewSecrets(Name, noun, secrets)
	if err != nil {
		return nil, err
	}
	return adapter.Build(&Adapter{secrets: s}, opts)
}

// Name returns "razorpay".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, a.event)
}
