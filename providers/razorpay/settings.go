package razorpay

import (
	"fmt"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Razorpay's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	// maxAge is set by Check from the retention, for Build.
	maxAge  time.Duration
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

// retryWindow is how long Razorpay retries an event after its created_at
// (docs/providers.md, "Razorpay").
const retryWindow = 24 * time.Hour

// ageMargin is kept off the retention for the adapter's max age: clocks
// disagree, and a record is pruned up to a prune interval late, never
// early, so the margin only ever refuses a little sooner.
const ageMargin = time.Hour

// Check refuses, when Razorpay is on, a retention that does not outlast
// Razorpay's retries with the margin, and keeps the retention less the
// margin as the adapter's max age (Build).
func (s *Settings) Check(env providers.Env) error {
	if len(s.Secrets) == 0 || env.Retention <= 0 {
		return nil
	}
	if env.Retention <= retryWindow+ageMargin {
		return fmt.Errorf("%s: %s must be longer than Razorpay's 24h of retries plus %s, or genuine retries would be refused as too old",
			env.Var("RETENTION"), env.Retention, ageMargin)
	}
	s.maxAge = env.Retention - ageMargin
	return nil
}

// Build returns the adapter when at least one secret is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.Secrets) == 0 {
		return nil, nil
	}
	if s.maxAge > 0 {
		return New(s.Secrets, WithMaxAge(s.maxAge, time.Now))
	}
	return New(s.Secrets)
}
