package duitku

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// Settings are Duitku's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	MerchantCode string   `envconfig:"DUITKU_MERCHANT_CODE" desc:"the Duitku merchant (project) code; with DUITKU_API_KEYS, enables /webhooks/duitku"`
	APIKeys      []string `envconfig:"DUITKU_API_KEYS" desc:"comma-separated Duitku API keys of that project"`
	VerifyStatus bool     `envconfig:"DUITKU_VERIFY_STATUS" default:"true" desc:"confirm each new Duitku callback with Duitku's transaction status API before forwarding it, with the merchant code and API key already configured: the signature covers neither resultCode nor reference, and joins its fields without a separator; false turns it off (serve warns)"`
	APIURL       string   `envconfig:"DUITKU_API_URL" default:"https://passport.duitku.com" desc:"Duitku API the status check asks (sandbox: https://sandbox.duitku.com; https only, plain http only for a loopback host)"`
}

// Entry is Duitku's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "DUITKU_API_KEYS",
		SecretNoun: "API key",
		// SignedBody false: its signature covers merchantCode, amount and merchantOrderId only.
		// SignedType: confirmed with the status API (TypesConfirmed).
		SignedType: true,
	}
}

// TypesConfirmed reports whether the event type (resultCode, which the
// signature does not cover) is confirmed with the status API, so that a
// route may match it (providers.TypeConfirmer).
func (s *Settings) TypesConfirmed() bool { return s.VerifyStatus }

// Check refuses a merchant code without API keys or the reverse (Verify
// needs both), and a merchant code with surrounding white space. No API
// key is ever quoted.
func (s *Settings) Check(env providers.Env) error {
	switch {
	case s.MerchantCode != "" && len(s.APIKeys) == 0:
		return fmt.Errorf("%s: required with %s", env.Var("DUITKU_API_KEYS"), env.Var("DUITKU_MERCHANT_CODE"))
	case s.MerchantCode == "" && len(s.APIKeys) > 0:
		return fmt.Errorf("%s: required with %s: Verify checks the merchantCode Duitku posts", env.Var("DUITKU_MERCHANT_CODE"), env.Var("DUITKU_API_KEYS"))
	case strings.TrimSpace(s.MerchantCode) != s.MerchantCode:
		return fmt.Errorf("%s: has leading or trailing white space", env.Var("DUITKU_MERCHANT_CODE"))
	}
	if s.APIURL != "" {
		if _, err := ParseAPIURL(s.APIURL); err != nil {
			return fmt.Errorf("%s: %w", env.Var("DUITKU_API_URL"), err)
		}
	}
	if !s.VerifyStatus || s.MerchantCode == "" {
		// Off, or Duitku itself is off: the check on by default must not
		// stop a configuration without Duitku.
		return nil
	}
	// The status call runs under the claim, before the forward.
	return statusapi.CheckLease(env, "Duitku status check", DefaultStatusTimeout)
}

// Warnings implements providers.Warner: with Duitku on and the status
// check off, a captured callback can be re-sent with another resultCode
// and reference (neither is signed), or with digits moved between amount
// and merchantOrderId (joined without a separator), and is forwarded as a
// new event.
func (s *Settings) Warnings(env providers.Env) []string {
	if s.MerchantCode == "" || s.VerifyStatus {
		return nil
	}
	return []string{fmt.Sprintf("duitku: %s=false: the callback signature does not cover resultCode or reference, which make the event key and type, and joins amount and merchantOrderId without a separator: anyone holding one genuine callback can forward forged ones (resultCode=00, another order or amount); unset it or set it to true to confirm each callback with Duitku's status API", env.Var("DUITKU_VERIFY_STATUS"))}
}

// Build returns the adapter when the merchant code and at least one API
// key are set, with the status check when VerifyStatus asks for it.
func (s *Settings) Build() (providers.Provider, error) {
	if s.MerchantCode == "" && len(s.APIKeys) == 0 {
		return nil, nil
	}
	var opts []Option
	if s.VerifyStatus {
		opts = append(opts, WithStatusCheck(s.APIURL))
	}
	return New(s.MerchantCode, s.APIKeys, opts...)
}
