package standard

import (
	"fmt"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/signature"
)

// Settings are the variables of the standard provider in webhookd (the
// command adds its WEBHOOKD_ prefix to each name). The example lists two
// secrets, since a whsec_ secret takes no suffix.
type Settings struct {
	Secrets   []string      `envconfig:"STANDARD_SECRETS" desc:"comma-separated whsec_... secrets of a Standard Webhooks (or Svix) sender; enables /webhooks/standard"`
	Tolerance time.Duration `envconfig:"STANDARD_TOLERANCE" default:"5m" desc:"how far webhook-timestamp may be from now, either way"`
}

// Entry is the standard provider's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "STANDARD_SECRETS",
		SecretNoun: "signing secret",
		SignedBody: true, SignedType: true,
	}
}

// Check refuses a tolerance that is not positive, even while the provider
// is off, and a secret that is not a whsec_ secret, naming the variable and
// the secret's position (never its value).
func (s *Settings) Check(env providers.Env) error {
	if err := env.CheckTolerance("STANDARD_TOLERANCE", s.Tolerance, len(s.Secrets) > 0); err != nil {
		return err
	}
	for i, secret := range s.Secrets {
		if _, err := signature.DecodeWebhookSecret(secret); err != nil {
			return fmt.Errorf("%s: secret %d of %d: %w", env.Var("STANDARD_SECRETS"), i+1, len(s.Secrets), err)
		}
	}
	return nil
}

// Build returns the adapter when at least one secret is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.Secrets) == 0 {
		return nil, nil
	}
	return New(s.Secrets, s.Tolerance)
}
