package doku

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Name is the adapter's route segment and event key prefix.
const Name = "doku"

// The request headers a DOKU notification carries.
const (
	HeaderClientID  = "Client-Id"
	HeaderRequestID = "Request-Id"
	HeaderTimestamp = "Request-Timestamp"
	HeaderSignature = "Signature"
)

// DefaultNotificationPath is the Request-Target Verify expects unless told
// otherwise: webhookd's own route, for a notification URL registered
// without a rewriting proxy in front.
const DefaultNotificationPath = "/webhooks/doku"

// DefaultTolerance is how far Request-Timestamp may be from the receiver's
// clock by default. DOKU retries a notification 30 minutes, 6 hours and 12
// hours after the first attempt and does not document whether a retry is
// signed afresh, so the window covers the whole schedule with room to
// spare, while staying well inside webhookd's default record retention
// (docs/providers.md, "doku").
const DefaultTolerance = 24 * time.Hour

// Adapter verifies and parses DOKU notifications. Build one with New; an
// Adapter is safe for concurrent use. The zero value verifies nothing: it
// rejects every delivery.
type Adapter struct {
	clientID string
	secrets  adapter.Secrets
	target   string
	window   adapter.Window
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

// WithNotificationPath sets the Request-Target Verify expects and Sign
// signs: the path of the notification URL as registered in the DOKU Back
// Office. The default is DefaultNotificationPath.
func WithNotificationPath(path string) Option {
	return func(a *Adapter) error {
		a.target = path
		return nil
	}
}

// WithTolerance sets how far Request-Timestamp may be from now, either way.
// The default is DefaultTolerance.
func WithTolerance(d time.Duration) Option {
	return func(a *Adapter) error {
		a.window.Tolerance = d
		return nil
	}
}

// New returns an Adapter that accepts notifications for clientID signed with
// any of secretKeys (more than one while a key is being replaced). Sign uses
// the first key.
//
// Each key is used exactly as given (SK-...). New refuses an empty client
// id, an empty list, an empty key, any value with surrounding white space,
// a notification path that does not start with "/" or holds a control
// character or space, and a tolerance that is not positive.
func New(clientID string, secretKeys []string, opts ...Option) (*Adapter, error) {
	switch {
	case clientID == "":
		return nil, errors.New("doku: no client id configured")
	case !isHeaderValue(clientID, maxHeaderBytes):
		return nil, errors.New("doku: client id is longer than 256 bytes or has white space or control characters")
	}
	s, err := adapter.NewSecrets(Name, "secret key", secretKeys)
	if err != nil {
		return nil, err
	}
	a := &Adapter{
		clientID: clientID,
		secrets:  s,
		target:   DefaultNotificationPath,
		window:   adapter.Window{Tolerance: DefaultTolerance},
	}
	if err := adapter.Apply(a, opts); err != nil {
		return nil, err
	}
	if err := CheckNotificationPath(a.target); err != nil {
		return nil, err
	}
	if _, err := adapter.NewWindow(Name, a.window.Tolerance); err != nil {
		return nil, err
	}
	return a, nil
}

// CheckNotificationPath reports whether path can be a Request-Target: it
// must start with "/" and be printable ASCII without spaces, since it is
// signed on one line of DOKU's signature component.
func CheckNotificationPath(path string) error {
	if !strings.HasPrefix(path, "/") || !isHeaderValue(path, 2048) {
		return fmt.Errorf("doku: notification path %q must start with / and be printable ASCII without spaces", path)
	}
	return nil
}

// Name returns "doku".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, a.event)
}
