package twoctwop

import (
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Name is the adapter's route segment and event key prefix.
const Name = "2c2p"

// ContentType is how 2C2P posts its backend responses; Sign sets it so
// that `webhookd replay` sends fixtures the same way.
const ContentType = "application/json; charset=utf-8"

// FieldPayload is the body member that holds the token.
const FieldPayload = "payload"

// keyNoun is what the adapter calls one configured secret in messages.
const keyNoun = "secret key"

// Adapter verifies and parses 2C2P backend payment responses. Build one
// with New; an Adapter is safe for concurrent use. The zero value rejects
// every delivery.
type Adapter struct {
	keys adapter.Secrets
}

var _ providers.Provider = (*Adapter)(nil)

// New returns an Adapter that accepts tokens signed with any of keys, the
// merchant secret keys used as their text (Sign uses the first). It
// refuses an empty list, an empty key and a key with surrounding white
// space.
func New(keys []string) (*Adapter, error) {
	s, err := adapter.NewSecrets(Name, keyNoun, keys)
	if err != nil {
		return nil, err
	}
	return &Adapter{keys: s}, nil
}

// Name returns "2c2p".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, event)
}
