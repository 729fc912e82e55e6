package stripe

import (
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Stripe's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	Secrets   []string      `envconfig:"STRIPE_SECRETS" desc:"comma-separated whsec_... signing secrets; enables /webhooks/stripe" example:"whsec_table_test_secret"`
	Tolerance time.Duration `envconfig:"STRIPE_TOLERANCE" default:"5m" desc:"how old a Stripe-Signature timestamp may be"`
}

// Entry is Stripe's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "STRIPE_SECRETS",
		SecretNoun: "signing secret",
		SignedBody: true, SignedType: true,
	}
}

// Check refuses a tolerance that is not positive, even while Stripe is off,
// so that enabling it later cannot start without the replay check.
func (s *Settings) Check(env providers.Env) error {
	return env.CheckTolerance("STRIPE_TOLERANCE", s.Tolerance, len(s.Secrets) > 0)
}

// Build returns the adapter when at least one secret is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.Secrets) == 0 {
		return nil, nil
	}
	return New(s.Secrets, s.Tolerance)
}
