package duitku

import (
	"errors"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
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

// Adapter verifies and parses Duitku callbacks. Build one with New; an
// Adapter is safe for concurrent use. The zero value rejects every
// delivery.
type Adapter struct {
	merchantCode string
	apiKeys      []string
}

var (
	_ providers.Provider = (*Adapter)(nil)
	_ providers.Signer   = (*Adapter)(nil)
)

// New returns an Adapter for the Duitku project merchantCode that accepts
// callbacks signed with any of apiKeys (Sign uses the first). It refuses an
// empty merchant code or key list, an empty key, and either with
// surrounding white space (a stray space after a comma would fail every
// callback).
func New(merchantCode string, apiKeys []string) (*Adapter, error) {
	switch {
	case merchantCode == "":
		return nil, errors.New("duitku: no merchant code configured")
	case strings.TrimSpace(merchantCode) != merchantCode:
		return nil, errors.New("duitku: the merchant code has leading or trailing white space")
	case len(apiKeys) == 0:
		return nil, errors.New("duitku: no API key configured")
	}
	for i, k := range apiKeys {
		switch {
		case k == "":
			return nil, fmt.Errorf("duitku: API key %d of %d is empty", i+1, len(apiKeys))
		case strings.TrimSpace(k) != k:
			return nil, fmt.Errorf("duitku: API key %d of %d has leading or trailing white space", i+1, len(apiKeys))
		}
	}
	return &Adapter{merchantCode: merchantCode, apiKeys: append([]string(nil), apiKeys...)}, nil
}

// Name returns "duitku".
func (a *Adapter) Name() string { return Name }
