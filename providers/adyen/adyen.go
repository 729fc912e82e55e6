package adyen

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Name is the adapter's route segment and event key prefix.
const Name = "adyen"

// Accepted is the body Adyen is answered once every item of a request is
// settled. Adyen accepts any 2xx since 2024, but older endpoints and the
// Balance Platform documentation still ask for this text
// (https://docs.adyen.com/development-resources/webhooks/#accept-webhooks).
const Accepted = "[accepted]"

// Adapter verifies, splits and signs Adyen notifications. Build one with
// New; an Adapter is safe for concurrent use. The zero value verifies
// nothing: it rejects every delivery.
type Adapter struct {
	keys [][]byte
	// basicAuth is the Authorization header value Adyen must send, or
	// empty when basic auth is not configured.
	basicAuth string
	// accounts are the merchantAccountCodes accepted, or nil for any.
	accounts map[string]bool
}

var (
	_ providers.Provider = (*Adapter)(nil)
)

// Option configures an Adapter.
type Option = adapter.Option[Adapter]

// WithBasicAuth requires every request to carry HTTP basic auth with the
// user and password configured for the webhook in the Customer Area,
// given as "user:password" (the password may hold colons, the user not).
func WithBasicAuth(userPassword string) Option {
	return func(a *Adapter) error {
		user, _, ok := strings.Cut(userPassword, ":")
		if !ok || user == "" {
			return errors.New("adyen: basic auth must be user:password")
		}
		a.basicAuth = basicAuthHeader(userPassword)
		return nil
	}
}

// WithMerchantAccounts refuses (401) a request with an item for any
// merchantAccountCode but codes: the webhook's own accounts, as the
// Customer Area lists them. It refuses an empty list, an empty code, one
// with surrounding white space and one with a ":" (no merchant account
// code has one).
func WithMerchantAccounts(codes []string) Option {
	return func(a *Adapter) error {
		if len(codes) == 0 {
			return errors.New("adyen: no merchant account given")
		}
		a.accounts = make(map[string]bool, len(codes))
		for i, c := range codes {
			if c == "" || strings.TrimSpace(c) != c || strings.Contains(c, ":") {
				return fmt.Errorf("adyen: merchant account %d of %d is empty, has white space around it or holds a \":\"", i+1, len(codes))
			}
			a.accounts[c] = true
		}
		return nil
	}
}

// New returns an Adapter that accepts items signed with any of keys, each
// the hex HMAC key the Customer Area shows (the current one and, during a
// rotation, the previous one). Sign uses the first. New refuses an empty
// list and a key that is not hex.
func New(keys []string, opts ...Option) (*Adapter, error) {
	if len(keys) == 0 {
		return nil, errors.New("adyen: no HMAC key configured")
	}
	a := &Adapter{keys: make([][]byte, 0, len(keys))}
	for i, k := range keys {
		b, err := hex.DecodeString(k)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("adyen: HMAC key %d of %d is not a hex string", i+1, len(keys))
		}
		a.keys = append(a.keys, b)
	}
	if err := adapter.Apply(a, opts); err != nil {
		return nil, err
	}
	return a, nil
}

// Name returns "adyen".
func (a *Adapter) Name() string { return Name }

// ack is Adyen's answer: 200 with the text body "[accepted]".
var ack = providers.Acknowledgement{Status: 200, ContentType: "text/plain; charset=utf-8", Body: []byte(Accepted)}

// Ack returns Adyen's answer once every item is settled: 200 with the text
// body "[accepted]". The caller must not modify it.
func (a *Adapter) Ack() *providers.Acknowledgement { return &ack }
