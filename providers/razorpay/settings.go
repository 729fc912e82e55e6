package razorpay

import (
	"fmt"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Razorpay's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	Secrets []string      `envconfig:"RAZORPAY_SECRETS" desc:"comma-separated Razorpay webhook secrets (keep the old one a day after a rotation); enables /webhooks/razorpay" example:"rzp_table_test_webhook_secret"`
	MaxAge  time.Duration `envconfig:"RAZORPAY_MAX_AGE" desc:"refuse (401) an event whose signed created_at is older than this; off when unset or 0; when set, longer than 24h and shorter than WEBHOOKD_RETENTION (recommended: a capture replayed after its record is pruned is otherwise forwarded again)"`
}

// Entry is Razorpay's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "RAZORPAY_SECRETS",
		SecretNoun: "webhook secret",
		SignedBody: true, SignedType: true,
	}
}

// retryWindow is how long Razorpay retries an event after its created_at
// (docs/providers.md, "Razorpay").
const retryWindow = 24 * time.Hour

// Check holds an age check that is on (MaxAge set) to outlast Razorpay's
// retries, which would otherwise be refused as too old, and, while Razorpay
// is on, to stay below the retention, since an event older than its pruned
// record would verify and be forwarded again. Off, the default, it asks
// nothing: a genuine signed event of any age is accepted (the operator
// contract keeps 401 for a missing or wrong signature).
func (s *Settings) Check(env providers.Env) error {
	if s.MaxAge == 0 {
		return nil
	}
	if s.MaxAge <= retryWindow {
		return fmt.Errorf("%s: %s must be longer than Razorpay's 24h of retries, or genuine retries would be refused as too old (unset it to turn the check off)",
			env.Var("RAZORPAY_MAX_AGE"), s.MaxAge)
	}
	if len(s.Secrets) == 0 {
		return nil
	}
	return env.BelowRetention("RAZORPAY_MAX_AGE", s.MaxAge)
}

// Build returns the adapter when at least one secret is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.Secrets) == 0 {
		return nil, nil
	}
	if s.MaxAge > 0 {
		return New(s.Secrets, WithMaxAge(s.MaxAge, time.Now))
	}
	return New(s.Secrets)
}
