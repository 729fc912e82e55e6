package midtrans

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// Name is the adapter's route segment and event key prefix.
const Name = "midtrans"

// DefaultAPIURL is Midtrans's production API, which Confirm asks by default.
// The sandbox API is SandboxAPIURL.
const DefaultAPIURL = "https://api.midtrans.com"

// SandboxAPIURL is Midtrans's sandbox API, which knows the transactions of
// sandbox server keys (SB-...).
const SandboxAPIURL = "https://api.sandbox.midtrans.com"

// DefaultStatusTimeout bounds one call of the GET status API, connection
// included. Midtrans gives a notification 15 seconds before it counts as
// failed, and webhookd still has to forward it after confirming it.
const DefaultStatusTimeout = 5 * time.Second

// Adapter verifies, parses and optionally confirms Midtrans notifications.
// Build one with New; an Adapter is safe for concurrent use. The zero value
// verifies nothing: it rejects every delivery.
type Adapter struct {
	serverKey string

	// statusAPI is the API base URL Confirm asks; nil disables Confirm.
	statusAPI *url.URL
	status    statusapi.Config
}

// statusOf is where the status-check options find an Adapter's Config.
func statusOf(a *Adapter) *statusapi.Config { return &a.status }

var (
	_ providers.Provider  = (*Adapter)(nil)
	_ providers.Confirmer = (*Adapter)(nil)
)

// Option configures an Adapter built by New.
type Option = adapter.Option[Adapter]

// WithStatusCheck enables Confirm: before a notification is forwarded, the
// adapter asks the GET status API under apiURL (DefaultAPIURL, or the
// sandbox API for a sandbox server key) and refuses the notification unless
// Midtrans reports the same status. An empty apiURL means DefaultAPIURL.
func WithStatusCheck(apiURL string) Option {
	return statusapi.WithCheck(statusOf, apiURL)
}

// WithHTTPClient makes Confirm use c (its transport, for one) instead of a
// client of its own. Redirects are still not followed, whatever c says: the
// request carries the server key. A nil c is ignored.
func WithHTTPClient(c *http.Client) Option {
	return statusapi.WithHTTPClient(statusOf, c)
}

// WithStatusTimeout bounds each GET status call (DefaultStatusTimeout
// otherwise). New refuses a timeout that is not positive.
func WithStatusTimeout(d time.Duration) Option {
	return statusapi.WithTimeout(statusOf, d)
}

// New returns an Adapter that verifies notifications signed with serverKey.
// Confirm stays a no-op unless WithStatusCheck is given.
//
// The key is used exactly as given. New refuses an empty key and one with
// surrounding white space (almost always a copy-and-paste accident that would
// fail every notification), a status API URL that ParseAPIURL refuses (plain
// http to a host that is not loopback included: the server key would travel
// in clear), and a timeout that is not positive.
func New(serverKey string, opts ...Option) (*Adapter, error) {
	switch {
	case serverKey == "":
		return nil, errors.New("midtrans: no server key configured")
	case strings.TrimSpace(serverKey) != serverKey:
		return nil, errors.New("midtrans: server key has leading or trailing white space")
	}
	a := &Adapter{serverKey: serverKey, status: statusapi.NewConfig(DefaultStatusTimeout)}
	if err := adapter.Apply(a, opts); err != nil {
		return nil, err
	}
	u, err := a.status.Setup(Name, DefaultAPIURL)
	if err != nil {
		return nil, err
	}
	a.statusAPI = u
	return a, nil
}

// ParseAPIURL checks a Midtrans API base URL (statusapi.ParseAPIURL: https,
// or plain http for a loopback host only, without credentials, query or
// fragment; a trailing slash dropped): every status call carries the server
// key. The configuration uses it to report a bad URL before start-up; New
// refuses what it refuses.
func ParseAPIURL(raw string) (*url.URL, error) {
	return statusapi.ParseAPIURL(Name, raw)
}

// Name returns "midtrans".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, a.event)
}
