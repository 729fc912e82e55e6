package paddle

import (
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Paddle's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	Secrets   []string      `envconfig:"PADDLE_SECRETS" desc:"comma-separated Paddle notification destination secrets (pdl_ntfset_...); enables /webhooks/paddle" example:"pdl_ntfset_table_test_secret"`
	Tolerance time.Duration `envconfig:"PADDLE_TOLERANCE" default:"5m" desc:"how far a Paddle-Signature timestamp may be from now (older, or ahead of the clock)"`
}

// Entry is Paddle's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "PADDLE_SECRETS",
		SecretNoun: "notification destination secret",
		SignedBody: true, SignedType: true,
	}
}

// Check refuses a tolerance that is not positive, even while Paddle is off,
// so that enabling it later cannot start without the replay check.
func (s *Settings) Check(env providers.Env) error {
	return env.CheckTolerance("PADDLE_TOLERANCE", s.Tolerance, len(s.Secrets) > 0)
}

// Build returns the adapter when at least one secret is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.Secrets) == 0 {
		return nil, nil
	}
	return New(s.Secrets, s.Tolerance)
}
