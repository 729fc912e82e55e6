package razorpay

import (
	"fmt"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Razorpay's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	Secrets []string      `envconfig:"RAZORPAY_SECRETS" desc:"comma-separated Razorpay webhook secrets (keep the old one a day after a rotation); enables /webhooks/razorpay"`
	MaxAge  time.Duration `envconfig:"RAZORPAY_MAX_AGE" desc:"refuse (401) an event whose signed created_at is older than this; unset or 0, WEBHOOKD_RETENTION is the bound; when set, longer than 24h and shorter than WEBHOOKD_RETENTION"`
	// retention is WEBHOOKD_RETENTION, as Check saw it: the bound on
	// created_at when MaxAge is not set.
	retention time.Duration
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

// Check holds a max age that is set (MaxAge) to outlast Razorpay's
// retries, which would otherwise be refused as too old, and, while Razorpay
// is on, to stay below the retention, since an event older than its pruned
// record would verify and be forwarded again. Unset, the retention itself
// bounds created_at (Build): a signed timestamp older than the retention is
// refused on every gateway that signs one.
func (s *Settings) Check(env providers.Env) error {
	s.retention = env.Retention
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
	maxAge := s.MaxAge
	if maxAge == 0 {
		maxAge = s.retention
	}
	if maxAge > 0 {
		return New(s.Secrets, WithMaxAge(maxAge, time.Now))
	}
	return New(s.Secrets)
}
