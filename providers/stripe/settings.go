package stripe

import (
	"fmt"
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
	}
}

// Check refuses a tolerance that is not positive, even while Stripe is off,
// so that enabling it later cannot start without the replay check.
func (s *Settings) Check(env providers.Env) error {
	if s.Tolerance <= 0 {
		return fmt.Errorf("%s: must be positive (0 would disable the replay check)", env.Var("STRIPE_TOLERANCE"))
	}
	if len(s.Secrets) > 0 {
		if err := env.BelowRetention("STRIPE_TOLERANCE", s.Tolerance); err != nil {
			return err
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
