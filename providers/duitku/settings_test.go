package duitku_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
)

func TestSettings(t *testing.T) {
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }}
	tests := []struct {
		name string
		s    duitku.Settings
		err  string // "" when Check passes
		on   bool
	}{
		{"off", duitku.Settings{}, "", false},
		{"on", duitku.Settings{MerchantCode: "DS15782", APIKeys: []string{"k1", "k2"}}, "", true},
		{"merchant code without keys", duitku.Settings{MerchantCode: "DS15782"}, "WEBHOOKD_DUITKU_API_KEYS: required with WEBHOOKD_DUITKU_MERCHANT_CODE", false},
		{"keys without merchant code", duitku.Settings{APIKeys: []string{"secret_key_1"}}, "WEBHOOKD_DUITKU_MERCHANT_CODE: required with WEBHOOKD_DUITKU_API_KEYS: Verify checks the merchantCode Duitku posts", false},
		{"merchant code with a space", duitku.Settings{MerchantCode: "DS15782 ", APIKeys: []string{"k1"}}, "WEBHOOKD_DUITKU_MERCHANT_CODE: has leading or trailing white space", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Check(env)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				require.NotContains(t, err.Error(), "secret_key_1")
				return
			}
			require.NoError(t, err)
			p, err := tt.s.Build()
			require.NoError(t, err)
			require.Equal(t, tt.on, p != nil)
		})
	}
}
