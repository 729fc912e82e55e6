package midtrans

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// TestSettingsStatusAPI: the status check is on by default and asks the
// API that knows the key's transactions: a sandbox key with the production
// default asks the sandbox API; any other URL is asked as given.
func TestSettingsStatusAPI(t *testing.T) {
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }, Lease: 60 * time.Second, DispatchTimeout: 10 * time.Second, StoreCalls: 10 * time.Second}
	tests := []struct {
		key, api, want string
	}{
		{"SB-Mid-server-x", DefaultAPIURL, SandboxAPIURL},
		{"SB-Mid-server-x", "https://API.midtrans.com/", SandboxAPIURL},
		{"SB-Mid-server-x", SandboxAPIURL, SandboxAPIURL},
		{"SB-Mid-server-x", "http://127.0.0.1:8089", "http://127.0.0.1:8089"},
		{"Mid-server-x", DefaultAPIURL, DefaultAPIURL},
		{"Mid-server-x", "https://proxy.example/midtrans", "https://proxy.example/midtrans"},
	}
	for _, tc := range tests {
		s := Settings{ServerKey: tc.key, VerifyStatus: true, APIURL: tc.api}
		require.NoError(t, s.Check(env))
		p, err := s.Build()
		require.NoError(t, err)
		require.Equal(t, tc.want, p.(*Adapter).statusAPI.String(), "%s %s", tc.key, tc.api)
	}
	off := Settings{ServerKey: "SB-Mid-server-x", APIURL: DefaultAPIURL}
	p, err := off.Build()
	require.NoError(t, err)
	require.Nil(t, p.(*Adapter).statusAPI, "opted out")
}
