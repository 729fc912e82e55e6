package braintree

import (
	"fmt"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Braintree's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	Keys []string `envconfig:"BRAINTREE_KEYS" desc:"comma-separated public_key:private_key Braintree API key pairs: form field bt_signature holds public_key|<hex HMAC-SHA1 keyed by SHA-1(private_key) over bt_payload> pairs joined by &; enables /webhooks/braintree"`
}

// Entry is Braintree's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "BRAINTREE_KEYS",
		SecretNoun: keyNoun,
		// SignedBody false: the body is a form, and routing's where
		// reads JSON; the signature covers bt_payload, kind among it.
		SignedType: true,
	}
}

// Check refuses a key list New would refuse, naming the variable and
// never quoting a private key.
func (s *Settings) Check(env providers.Env) error {
	if len(s.Keys) == 0 {
		return nil
	}
	if _, err := New(s.Keys); err != nil {
		return fmt.Errorf("%s: %w", env.Var("BRAINTREE_KEYS"), err)
	}
	return nil
}

// Build returns the adapter when at least one key pair is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.Keys) == 0 {
		return nil, nil
	}
	return New(s.Keys)
}
