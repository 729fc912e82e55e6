package duitku

import (
	"errors"
	"net/url"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// Name is the adapter's route segment and event key prefix.
const Name = "duitku"

// ContentType is how Duitku posts its callbacks; Sign sets it so that
// `webhookd replay` sends fixtures the same way.
const ContentType = "application/x-www-form-urlencoded"

// The form fields the adapter reads.
const (
	FieldMerchantCode    = "merchantCode"
	FieldAmount          = "amount"
	FieldMerchantOrderID = "merchantOrderId"
	FieldReference       = "reference"
	FieldResultCode      = "resultCode"
	FieldSignature       = "signature"
)

// Adapter verifies, parses and optionally confirms Duitku callbacks.
// Build one with New; an Adapter is safe for concurrent use. The zero
// value rejects every delivery.
type Adapter struct {
	merchantCode string
	apiKeys      []string

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

// New returns an Adapter for the Duitku project merchantCode that accepts
// callbacks signed with any of apiKeys (Sign uses the first). It refuses an
// empty merchant code or key list, an empty key, and either with
// surrounding white space (a stray space after a comma would fail every
// callback), a status API URL that ParseAPIURL refuses and a status
// timeout that is not positive. Confirm stays a no-op unless
// WithStatusCheck is given.
func New(merchantCode string, apiKeys []string, opts ...Option) (*Adapter, error) {
	switch {
	case merchantCode == "":
		return nil, errors.New("duitku: no merchant code configured")
	case strings.TrimSpace(merchantCode) != merchantCode:
		return nil, errors.New("duitku: the merchant code has leading or trailing white space")
	}
	if err := adapter.Check(Name, "API key", apiKeys); err != nil {
		return nil, err
	}
	a := &Adapter{merchantCode: merchantCode, apiKeys: append([]string(nil), apiKeys...), status: statusapi.NewConfig(DefaultStatusTimeout)}
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

// Name returns "duitku".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, a.event)
}
