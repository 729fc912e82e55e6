package midtrans

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// Settings are Midtrans's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	ServerKey    string `envconfig:"MIDTRANS_SERVER_KEY" desc:"Midtrans server key; enables /webhooks/midtrans" example:"SB-Mid-server-table-test"`
	VerifyStatus bool   `envconfig:"MIDTRANS_VERIFY_STATUS" default:"false" desc:"confirm each Midtrans notification with Midtrans's GET status API before forwarding it (the signature does not cover the status)"`
	APIURL       string `envconfig:"MIDTRANS_API_URL" default:"https://api.midtrans.com" desc:"Midtrans API the status check asks (sandbox: https://api.sandbox.midtrans.com)"`
}

// Entry is Midtrans's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "MIDTRANS_SERVER_KEY",
		SecretNoun: "server key",
	}
}

// Check validates the settings. The server key is never quoted.
func (s *Settings) Check(env providers.Env) error {
	v := func(name, format string, args ...any) error {
		return fmt.Errorf("%s: %s", env.Var(name), fmt.Sprintf(format, args...))
	}
	key := s.ServerKey
	if key != "" && strings.TrimSpace(key) != key {
		return v("MIDTRANS_SERVER_KEY", "has leading or trailing white space")
	}
	u, err := ParseAPIURL(s.APIURL)
	if err != nil {
		return v("MIDTRANS_API_URL", "%v", err)
	}
	if !s.VerifyStatus {
		return nil
	}
	switch {
	case key == "":
		return v("MIDTRANS_VERIFY_STATUS", "needs %s", env.Var("MIDTRANS_SERVER_KEY"))
	case strings.HasPrefix(key, "SB-") && u.Hostname() == "api.midtrans.com":
		// Sandbox transactions are unknown to the production API: every
		// notification would be refused.
		return v("MIDTRANS_API_URL", "the server key is a sandbox key (SB-...); set https://api.sandbox.midtrans.com")
	}
	// The status call runs under the claim, before the forward.
	return statusapi.CheckLease(env, "Midtrans status check", DefaultStatusTimeout)
}

// Warnings implements providers.Warner: with Midtrans on and the status
// check off, a captured notification can be re-sent with another
// transaction_status, transaction_id, fraud_status or refund_key (none is
// signed) and is forwarded as a new event.
func (s *Settings) Warnings(env providers.Env) []string {
	if s.ServerKey == "" || s.VerifyStatus {
		return nil
	}
	return []string{fmt.Sprintf("midtrans: the signature does not cover transaction_status, transaction_id, fraud_status or refund_key, which make the event key and type: anyone holding one genuine notification can forward forged ones (a settlement included); set %s=true to confirm each notification with Midtrans's status API", env.Var("MIDTRANS_VERIFY_STATUS"))}
}

// Build returns the adapter when the server key is set, with the status
// check when VerifyStatus asks for it.
func (s *Settings) Build() (providers.Provider, error) {
	if s.ServerKey == "" {
		return nil, nil
	}
	var opts []Option
	if s.VerifyStatus {
		opts = append(opts, WithStatusCheck(s.APIURL))
	}
	return New(s.ServerKey, opts...)
}
