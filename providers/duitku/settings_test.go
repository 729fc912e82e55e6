package duitku_test

import (
	"strings"
	"testing"
	"time"

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

func TestSettingsStatusCheck(t *testing.T) {
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }, Lease: 60 * time.Second, DispatchTimeout: 10 * time.Second, StoreCalls: 10 * time.Second}
	on := func(s duitku.Settings) duitku.Settings {
		s.MerchantCode, s.APIKeys = "DS15782", []string{"secret_key_1"}
		return s
	}
	tests := []struct {
		name string
		s    duitku.Settings
		env  providers.Env
		err  string // the error's start; "" when Check passes
	}{
		{"check on", on(duitku.Settings{VerifyStatus: true, APIURL: duitku.DefaultAPIURL}), env, ""},
		{"sandbox", on(duitku.Settings{VerifyStatus: true, APIURL: duitku.SandboxAPIURL}), env, ""},
		{"loopback http", on(duitku.Settings{VerifyStatus: true, APIURL: "http://127.0.0.1:9999"}), env, ""},
		{"plain http", on(duitku.Settings{VerifyStatus: true, APIURL: "http://passport.duitku.com"}), env, "WEBHOOKD_DUITKU_API_URL: duitku: API URL must use https"},
		{"plain http while off", on(duitku.Settings{APIURL: "http://passport.duitku.com"}), env, "WEBHOOKD_DUITKU_API_URL: "},
		{"credentials", on(duitku.Settings{VerifyStatus: true, APIURL: "https://u:secret_key_1@passport.duitku.com"}), env, "WEBHOOKD_DUITKU_API_URL: duitku: API URL must not have credentials"},
		{"lease too short", on(duitku.Settings{VerifyStatus: true, APIURL: duitku.DefaultAPIURL}),
			providers.Env{Var: env.Var, Lease: 25 * time.Second, DispatchTimeout: 10 * time.Second, StoreCalls: 10 * time.Second},
			"WEBHOOKD_LEASE: 25s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (10s) plus the Duitku status check (5s)"},
		{"short lease is fine without the check", on(duitku.Settings{APIURL: duitku.DefaultAPIURL}),
			providers.Env{Var: env.Var, Lease: 25 * time.Second, DispatchTimeout: 10 * time.Second, StoreCalls: 10 * time.Second}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Check(tt.env)
			if tt.err != "" {
				require.Error(t, err)
				require.True(t, strings.HasPrefix(err.Error(), tt.err), "got %q", err)
				require.NotContains(t, err.Error(), "secret_key_1")
				return
			}
			require.NoError(t, err)
			p, err := tt.s.Build()
			require.NoError(t, err)
			_, isConfirmer := p.(providers.Confirmer)
			require.True(t, isConfirmer)
		})
	}
	// The check is on by default: with Duitku itself off, it is no error.
	off := duitku.Settings{VerifyStatus: true, APIURL: duitku.DefaultAPIURL}
	require.NoError(t, off.Check(env))
	p, err := off.Build()
	require.NoError(t, err)
	require.Nil(t, p)
}

func TestSettingsWarnings(t *testing.T) {
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }}
	require.Empty(t, (&duitku.Settings{}).Warnings(env), "off")
	s := &duitku.Settings{MerchantCode: "DS15782", APIKeys: []string{"secret_key_1"}}
	w := s.Warnings(env)
	require.Len(t, w, 1)
	require.Contains(t, w[0], "WEBHOOKD_DUITKU_VERIFY_STATUS=false")
	require.NotContains(t, w[0], "secret_key_1")
	s.VerifyStatus = true
	require.Empty(t, s.Warnings(env), "the status check closes the gap")
}
