package duitku

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// Settings are Duitku's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	MerchantCode string   `envconfig:"DUITKU_MERCHANT_CODE" desc:"the Duitku merchant (project) code; with DUITKU_API_KEYS, enables /webhooks/duitku" example:"DS15782"`
	APIKeys      []string `envconfig:"DUITKU_API_KEYS" desc:"comma-separated Duitku API keys of that project" example:"duitku_table_test_api_key"`
}

// Entry is Duitku's line in webhookd's provider table.
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "DUITKU_API_KEYS",
		SecretNoun: "API key",
	}
}

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
	return nil
}

// Build returns the adapter when the merchant code and at least one API
// key are set.
func (s *Settings) Build() (providers.Provider, error) {
	if s.MerchantCode == "" && len(s.APIKeys) == 0 {
		return nil, nil
	}
	return New(s.MerchantCode, s.APIKeys)
}
