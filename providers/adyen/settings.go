package adyen

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Adyen's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	HMACKeys  []string `envconfig:"ADYEN_HMAC_KEYS" desc:"comma-separated hex HMAC keys of the Adyen standard webhook (keep the old one during a rotation); enables /webhooks/adyen"`
	BasicAuth string   `envconfig:"ADYEN_BASIC_AUTH" desc:"user:password that Adyen sends as basic auth (set in the webhook's settings; checked when set)"`
	// MerchantAccounts, when set, are the only merchantAccountCodes whose
	// items are accepted.
	MerchantAccounts []string `envconfig:"ADYEN_MERCHANT_ACCOUNTS" desc:"comma-separated merchant account codes of the webhook; when set, a request with an item for any other account is 401"`
}

// Entry is Adyen's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "ADYEN_HMAC_KEYS",
		SecretNoun: "HMAC key",
		// SignedBody false: each item's HMAC covers eight of its fields only.
		SignedType: true,
	}
}

// Check refuses a basic auth setting without a user, naming the variable
// but never its value, and a merchant account list that
// WithMerchantAccounts refuses.
func (s *Settings) Check(env providers.Env) error {
	if s.BasicAuth != "" {
		if user, _, ok := strings.Cut(s.BasicAuth, ":"); !ok || user == "" {
			return fmt.Errorf("%s: must be user:password", env.Var("ADYEN_BASIC_AUTH"))
		}
	}
	if len(s.MerchantAccounts) > 0 {
		if err := WithMerchantAccounts(s.MerchantAccounts)(&Adapter{}); err != nil {
			return fmt.Errorf("%s: %w", env.Var("ADYEN_MERCHANT_ACCOUNTS"), err)
		}
	}
	return nil
}

// Build returns the adapter when at least one HMAC key is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.HMACKeys) == 0 {
		return nil, nil
	}
	var opts []Option
	if s.BasicAuth != "" {
		opts = append(opts, WithBasicAuth(s.BasicAuth))
	}
	if len(s.MerchantAccounts) > 0 {
		opts = append(opts, WithMerchantAccounts(s.MerchantAccounts))
	}
	return New(s.HMACKeys, opts...)
}
