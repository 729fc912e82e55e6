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
	ServerKey    string `envconfig:"MIDTRANS_SERVER_KEY" desc:"Midtrans server key; enables /webhooks/midtrans"`
	VerifyStatus bool   `envconfig:"MIDTRANS_VERIFY_STATUS" default:"true" desc:"confirm each new Midtrans notification with Midtrans's GET status API before forwarding it, with the server key already configured: the signature covers neither the status nor the transaction id, and joins its fields without a separator; false turns it off (serve warns)"`
	APIURL       string `envconfig:"MIDTRANS_API_URL" default:"https://api.midtrans.com" desc:"Midtrans API the status check asks (a sandbox server key, SB-..., asks https://api.sandbox.midtrans.com instead of the production default)"`
}

// Entry is Midtrans's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "MIDTRANS_SERVER_KEY",
		SecretNoun: "server key",
		// SignedBody false: its signature covers order_id, status_code and gross_amount only.
		// SignedType: confirmed with the status API (TypesConfirmed).
		SignedType: true,
	}
}

// TypesConfirmed reports whether the event type (transaction_status, which the
// signature does not cover) is confirmed with the status API, so that a
// route may match it (providers.TypeConfirmer).
func (s *Settings) TypesConfirmed() bool { return s.VerifyStatus }

// Check validates the settings. The server key is never quoted.
func (s *Settings) Check(env providers.Env) error {
	v := func(name, format string, args ...any) error {
		return fmt.Errorf("%s: %s", env.Var(name), fmt.Sprintf(format, args...))
	}
	key := s.ServerKey
	if key != "" && strings.TrimSpace(key) != key {
		return v("MIDTRANS_SERVER_KEY", "has leading or trailing white space")
	}
	if _, err := ParseAPIURL(s.APIURL); err != nil {
		return v("MIDTRANS_API_URL", "%v", err)
	}
	if !s.VerifyStatus || key == "" {
		// Off, or Midtrans itself is off: the check on by default must
		// not stop a configuration without Midtrans.
		return nil
	}
	// The status call runs under the claim, before the forward.
	return statusapi.CheckLease(env, "Midtrans status check", DefaultStatusTimeout)
}

// Warnings implements providers.Warner: with Midtrans on and the status
// check off, a captured notification can be re-sent with another
// transaction_status, transaction_id, fraud_status or refund_key (none is
// signed), or with characters moved between order_id, status_code and
// gross_amount (joined without a separator), and is forwarded as a new
// event.
func (s *Settings) Warnings(env providers.Env) []string {
	if s.ServerKey == "" || s.VerifyStatus {
		return nil
	}
	return []string{fmt.Sprintf("midtrans: %s=false: the signature does not cover transaction_status, transaction_id, fraud_status or refund_key, which make the event key and type, and joins order_id, status_code and gross_amount without a separator: anyone holding one genuine notification can forward forged ones (a settlement, another order or amount included); unset it or set it to true to confirm each notification with Midtrans's status API", env.Var("MIDTRANS_VERIFY_STATUS"))}
}

// Build returns the adapter when the server key is set, with the status
// check when VerifyStatus asks for it.
func (s *Settings) Build() (providers.Provider, error) {
	if s.ServerKey == "" {
		return nil, nil
	}
	var opts []Option
	if s.VerifyStatus {
		opts = append(opts, WithStatusCheck(s.statusAPIURL()))
	}
	return New(s.ServerKey, opts...)
}

// statusAPIURL is the API the status check asks: APIURL, except that a
// sandbox server key (SB-...) with the production API asks the sandbox
// API. Sandbox transactions are unknown to the production API, where every
// notification would be refused, so that pairing is never what is meant;
// with the check on by default, a sandbox set-up needs no other variable.
func (s *Settings) statusAPIURL() string {
	if strings.HasPrefix(s.ServerKey, "SB-") {
		if u, err := ParseAPIURL(s.APIURL); err == nil && strings.EqualFold(u.Hostname(), "api.midtrans.com") {
			return SandboxAPIURL
		}
	}
	return s.APIURL
}
