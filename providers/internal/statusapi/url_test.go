package statusapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

func TestParseAPIURL(t *testing.T) {
	tests := []struct {
		raw, want, err string
	}{
		{"https://api.midtrans.com", "https://api.midtrans.com", ""},
		{"https://api.midtrans.com/", "https://api.midtrans.com", ""},
		{"https://example.com/base//", "https://example.com/base", ""},
		{"http://127.0.0.1:8089", "http://127.0.0.1:8089", ""},
		{"http://localhost:8089/midtrans/", "http://localhost:8089/midtrans", ""},
		{"http://LOCALHOST", "http://LOCALHOST", ""},
		{"http://[::1]:80", "http://[::1]:80", ""},
		{"http://api.midtrans.com", "", "x: API URL must use https (credentials are sent to it); plain http is allowed only for a loopback host"},
		{"http://127.0.0.1.evil.example", "", "x: API URL must use https"},
		{"http://localhost.evil.example", "", "x: API URL must use https"},
		{"http://10.0.0.1", "", "x: API URL must use https"},
		{"api.midtrans.com", "", "x: API URL is not an absolute http(s) URL"},
		{"ftp://api.midtrans.com", "", "x: API URL is not an absolute http(s) URL"},
		{"https:api.midtrans.com", "", "x: API URL is not an absolute http(s) URL"},
		{"", "", "x: API URL is not an absolute http(s) URL"},
		{"https://u:hunter2@api.midtrans.com", "", "x: API URL must not have credentials, a query or a fragment"},
		{"https://api.midtrans.com/?x=1", "", "x: API URL must not have credentials"},
		{"https://api.midtrans.com/?", "", "x: API URL must not have credentials"},
		{"https://api.midtrans.com/#f", "", "x: API URL must not have credentials"},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := statusapi.ParseAPIURL("x", tc.raw)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), "hunter2")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, u.String())
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true,
		"": false, "[::1]": false, "localhost.": false, "10.0.0.1": false, "example.com": false, "0.0.0.0": false,
	} {
		require.Equal(t, want, statusapi.IsLoopback(host), host)
	}
}

func TestSameDecimal(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"60000.00", "60000", true},
		{"060000.0", "60000", true},
		{"0", "0.00", true},
		{"60000.01", "60000", false},
		{"600000", "60000", false},
		{"-1", "-1", false},
		{"1e3", "1000", false},
		{"", "", false},
		{".5", "0.5", false},
		{"1.", "1", false},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, statusapi.SameDecimal(tc.a, tc.b), "%q %q", tc.a, tc.b)
		require.Equal(t, tc.want, statusapi.SameDecimal(tc.b, tc.a), "%q %q", tc.b, tc.a)
	}
}

func TestCheckLease(t *testing.T) {
	env := providers.Env{
		Var:   func(n string) string { return "WEBHOOKD_" + n },
		Lease: 20 * time.Second, DispatchTimeout: 10 * time.Second, StoreCalls: 4 * time.Second,
	}
	require.NoError(t, statusapi.CheckLease(env, "X check", 5*time.Second))
	env.Lease = 19 * time.Second
	err := statusapi.CheckLease(env, "X check", 5*time.Second)
	require.EqualError(t, err, "WEBHOOKD_LEASE: 19s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (10s) plus the X check (5s) plus the store's calls (4s, twice WEBHOOKD_STORE_TIMEOUT), or a slow delivery could be taken over and sent twice")
}
