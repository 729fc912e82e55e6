package twoctwop

import (
	"github.com/webhookd/webhookd/providers"
)

// Settings are 2C2P's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	SecretKeys []string `envconfig:"2C2P_SECRET_KEYS" desc:"comma-separated 2C2P merchant secret keys (used as their text): body {\"payload\":\"<JWT>\"}, HS256; enables /webhooks/2c2p"`
}

// Entry is 2C2P's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "2C2P_SECRET_KEYS",
		SecretNoun: keyNoun,
		// SignedBody false: the body's JSON holds the signed token, not
		// the claims routing's where would read; respCode is a claim.
		SignedType: true,
	}
}

// Check has nothing to add to the list's own checks, which New makes.
func (s *Settings) Check(providers.Env) error { return nil }

// Build returns the adapter when at least one secret key is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.SecretKeys) == 0 {
		return nil, nil
	}
	return New(s.SecretKeys)
}
