package standard

import (
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
	"github.com/webhookd/webhookd/signature"
)

// Name is the adapter's route segment and event key prefix.
const Name = "standard"

// Header names, in Go's canonical form: the Standard Webhooks names and the
// svix- names Svix sends (its libraries read either).
const (
	HeaderID            = "Webhook-Id"
	HeaderTimestamp     = "Webhook-Timestamp"
	HeaderSignature     = "Webhook-Signature"
	HeaderSvixID        = "Svix-Id"
	HeaderSvixTimestamp = "Svix-Timestamp"
	HeaderSvixSignature = "Svix-Signature"
)

// DefaultTolerance is how far webhook-timestamp may be from now, either way,
// by default: the reference libraries' five minutes.
const DefaultTolerance = 5 * time.Minute

// Adapter verifies and parses Standard Webhooks deliveries. Build one with
// New; an Adapter is safe for concurrent use. The zero value verifies
// nothing: it rejects every delivery.
type Adapter struct {
	keys   [][]byte
	window adapter.Window
}

var (
	_ providers.Provider = (*Adapter)(nil)
)

// Option configures an Adapter built by New.
type Option = adapter.Option[Adapter]

// WithClock makes the Adapter read the current time from now instead of
// time.Now, for the tolerance check and for Sign. A nil now is ignored.
func WithClock(now func() time.Time) Option {
	return adapter.WithClock(func(a *Adapter) *adapter.Clock { return &a.window.Clock }, now)
}

// New returns an Adapter that accepts deliveries signed with any of secrets
// (more than one while a secret is rotated) whose timestamp is within
// tolerance of now, either way. Sign uses the first secret.
//
// Each secret must be a Standard Webhooks secret, "whsec_" and the standard
// base64 encoding of the key, as senders show it; New refuses any other
// form (a raw key would silently never match), surrounding white space, and
// a tolerance that is not positive.
func New(secrets []string, tolerance time.Duration, opts ...Option) (*Adapter, error) {
	keys, err := adapter.Decode(Name, "secret", secrets, signature.DecodeWebhookSecret)
	if err != nil {
		return nil, err
	}
	w, err := adapter.NewWindow(Name, tolerance)
	if err != nil {
		return nil, err
	}
	return adapter.Build(&Adapter{keys: keys, window: w}, opts)
}

// Name returns "standard".
func (a *Adapter) Name() string { return Name }
