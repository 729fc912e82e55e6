package razorpay

import "github.com/webhookd/webhookd/providers"

// Settings are Razorpay's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	Secrets []string `envconfig:"RAZORPAY_SECRETS" desc:"comma-separated Razorpay webhook secrets (keep the old one a day after a rotation); enables /webhooks/razorpay" example:"rzp_table_test_webhook_secret"`
}

// Entry is Razorpay's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "RAZORPAY_SECRETS",
		SecretNoun: "webhook secret",
	}
}

// Check has nothing to add to what New checks.
func (s *Settings) Check(providers.Env) error { return nil }

// Build returns the adapter when at least one secret is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.Secrets) == 0 {
		return nil, nil
	}
	return New(s.Secrets)
}
