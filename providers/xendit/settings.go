package xendit

import "github.com/webhookd/webhookd/providers"

// Settings are Xendit's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	CallbackTokens []string `envconfig:"XENDIT_CALLBACK_TOKENS" desc:"comma-separated accepted x-callback-token values; enables /webhooks/xendit"`
}

// Entry is Xendit's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "XENDIT_CALLBACK_TOKENS",
		SecretNoun: "callback token",
		// Neither SignedBody nor SignedType: a callback token authenticates
		// the sender, not the body the type is read from.
	}
}

// Check has nothing to add to what New checks.
func (s *Settings) Check(providers.Env) error { return nil }

// Build returns the adapter when at least one token is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.CallbackTokens) == 0 {
		return nil, nil
	}
	return New(s.CallbackTokens)
}
