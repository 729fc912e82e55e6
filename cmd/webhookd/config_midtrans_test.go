package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/midtrans"
)

func TestMidtransConfigErrors(t *testing.T) {
	const key = "SB-Mid-server-abcdef"
	tests := []struct {
		env  map[string]string
		want string // the error must start with this
	}{
		{map[string]string{"WEBHOOKD_MIDTRANS_VERIFY_STATUS": "maybe"}, "WEBHOOKD_MIDTRANS_VERIFY_STATUS: cannot parse"},
		{map[string]string{"WEBHOOKD_MIDTRANS_API_URL": "api.midtrans.com"}, "WEBHOOKD_MIDTRANS_API_URL: "},
		{map[string]string{"WEBHOOKD_MIDTRANS_API_URL": "https://api.midtrans.com/?debug=1"}, "WEBHOOKD_MIDTRANS_API_URL: "},
		{map[string]string{"WEBHOOKD_MIDTRANS_API_URL": "http://api.midtrans.com"}, "WEBHOOKD_MIDTRANS_API_URL: midtrans: API URL must use https"},
		// The status check is on by default.
		{map[string]string{"WEBHOOKD_MIDTRANS_SERVER_KEY": key, "WEBHOOKD_LEASE": "13s", "WEBHOOKD_STORE_TIMEOUT": "1s"},
			"WEBHOOKD_LEASE: 13s must be longer than"},
		{map[string]string{"WEBHOOKD_MIDTRANS_SERVER_KEY": key, "WEBHOOKD_MIDTRANS_VERIFY_STATUS": "true",
			"WEBHOOKD_MIDTRANS_API_URL": "https://api.sandbox.midtrans.com", "WEBHOOKD_LEASE": "13s",
			"WEBHOOKD_STORE_TIMEOUT": "1s"},
			"WEBHOOKD_LEASE: 13s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (10s) plus the Midtrans status check (5s) plus the store's calls (2s, twice WEBHOOKD_STORE_TIMEOUT)"},
		{map[string]string{"WEBHOOKD_MIDTRANS_SERVER_KEY": key + " "}, "WEBHOOKD_MIDTRANS_SERVER_KEY: has leading or trailing white space"},
		{map[string]string{"WEBHOOKD_XENDIT_CALLBACK_TOKENS": "a,,b"}, "WEBHOOKD_XENDIT_CALLBACK_TOKENS: "},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("WEBHOOKD_DOWNSTREAM_URL", "http://localhost:9000/")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"serve"}, &bytes.Buffer{}, &stderr)
			require.NotZero(t, code)
			line := strings.TrimPrefix(stderr.String(), "webhookd: configuration: ")
			require.True(t, strings.HasPrefix(line, tt.want), "got %q", stderr.String())
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line")
			require.NotContains(t, stderr.String(), "abcdef", "the server key is never quoted")
		})
	}
}

func TestMidtransConfigAccepts(t *testing.T) {
	tests := []map[string]string{
		{},
		// On by default, and no error while Midtrans itself is off.
		{"WEBHOOKD_MIDTRANS_VERIFY_STATUS": "true"},
		{"WEBHOOKD_MIDTRANS_SERVER_KEY": "SB-Mid-server-x", "WEBHOOKD_MIDTRANS_VERIFY_STATUS": "false"},
		{"WEBHOOKD_MIDTRANS_SERVER_KEY": "SB-Mid-server-x", "WEBHOOKD_MIDTRANS_VERIFY_STATUS": "false",
			"WEBHOOKD_LEASE": "13s", "WEBHOOKD_STORE_TIMEOUT": "1s"},
		// A sandbox key with the default API asks the sandbox API.
		{"WEBHOOKD_MIDTRANS_SERVER_KEY": "SB-Mid-server-x"},
		{"WEBHOOKD_MIDTRANS_SERVER_KEY": "SB-Mid-server-x", "WEBHOOKD_MIDTRANS_VERIFY_STATUS": "true"},
		{"WEBHOOKD_MIDTRANS_SERVER_KEY": "Mid-server-live", "WEBHOOKD_MIDTRANS_VERIFY_STATUS": "true"},
		{"WEBHOOKD_MIDTRANS_SERVER_KEY": "SB-Mid-server-x", "WEBHOOKD_MIDTRANS_VERIFY_STATUS": "1",
			"WEBHOOKD_MIDTRANS_API_URL": "https://api.sandbox.midtrans.com/"},
		{"WEBHOOKD_MIDTRANS_SERVER_KEY": "SB-Mid-server-x", "WEBHOOKD_MIDTRANS_VERIFY_STATUS": "true",
			"WEBHOOKD_MIDTRANS_API_URL": "http://127.0.0.1:8089"},
		{"WEBHOOKD_MIDTRANS_API_URL": "http://localhost:8089/midtrans"},
	}
	for _, env := range tests {
		clearEnv(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		c, err := loadConfig()
		require.NoError(t, err, "%v", env)
		_, err = buildRegistry(c)
		require.NoError(t, err, "%v", env)
	}
}

func TestMidtransConfigDefaults(t *testing.T) {
	clearEnv(t)
	c, err := loadConfig()
	require.NoError(t, err)
	require.True(t, providerSettings[*midtrans.Settings](t, c, "midtrans").VerifyStatus, "on by default")
	require.Equal(t, "https://api.midtrans.com", providerSettings[*midtrans.Settings](t, c, "midtrans").APIURL)

	var out bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"help"}, &out, &bytes.Buffer{}))
	for _, v := range []string{"WEBHOOKD_MIDTRANS_VERIFY_STATUS", "WEBHOOKD_MIDTRANS_API_URL", "https://api.midtrans.com"} {
		require.Contains(t, out.String(), v)
	}
}

func TestBuildRegistryProviders(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{}, []string{}},
		{map[string]string{"WEBHOOKD_STRIPE_SECRETS": "whsec_a"}, []string{"stripe"}},
		{map[string]string{"WEBHOOKD_MIDTRANS_SERVER_KEY": "SB-Mid-server-x", "WEBHOOKD_MIDTRANS_API_URL": "https://api.sandbox.midtrans.com"}, []string{"midtrans"}},
		{map[string]string{"WEBHOOKD_XENDIT_CALLBACK_TOKENS": "tok_a, tok_b"}, []string{"xendit"}},
		{map[string]string{"WEBHOOKD_STRIPE_SECRETS": "whsec_a", "WEBHOOKD_MIDTRANS_SERVER_KEY": "Mid-server-x",
			"WEBHOOKD_MIDTRANS_VERIFY_STATUS": "true", "WEBHOOKD_XENDIT_CALLBACK_TOKENS": "tok_a"},
			[]string{"midtrans", "stripe", "xendit"}},
	}
	for _, tt := range tests {
		clearEnv(t)
		for k, v := range tt.env {
			t.Setenv(k, v)
		}
		c, err := loadConfig()
		require.NoError(t, err)
		reg, err := buildRegistry(c)
		require.NoError(t, err)
		require.Equal(t, tt.want, reg.Names(), "%v", tt.env)
	}

	// The status check is on unless turned off: off, nothing is asked.
	clearEnv(t)
	t.Setenv("WEBHOOKD_MIDTRANS_SERVER_KEY", "SB-Mid-server-x")
	t.Setenv("WEBHOOKD_MIDTRANS_VERIFY_STATUS", "false")
	t.Setenv("WEBHOOKD_XENDIT_CALLBACK_TOKENS", " tok_a , tok_b ")
	c, err := loadConfig()
	require.NoError(t, err)
	reg, err := buildRegistry(c)
	require.NoError(t, err)
	xp, ok := reg.Lookup("xendit")
	require.True(t, ok)
	for _, tok := range []string{"tok_a", "tok_b"} {
		require.NoError(t, xp.Verify(context.Background(), providers.Delivery{Header: http.Header{"X-Callback-Token": {tok}}, Body: []byte(`{}`)}),
			"each token of the list, its spaces trimmed")
	}
	p, ok := reg.Lookup("midtrans")
	require.True(t, ok)
	require.NoError(t, p.(providers.Confirmer).Confirm(context.Background(), providers.Item{Body: []byte(`{}`)}),
		"with WEBHOOKD_MIDTRANS_VERIFY_STATUS=false nothing is asked")

	// Left unset, a notification is confirmed (this one is not readable,
	// so it is refused before any call).
	clearEnv(t)
	t.Setenv("WEBHOOKD_MIDTRANS_SERVER_KEY", "Mid-server-x")
	c, err = loadConfig()
	require.NoError(t, err)
	reg, err = buildRegistry(c)
	require.NoError(t, err)
	p, ok = reg.Lookup("midtrans")
	require.True(t, ok)
	require.ErrorIs(t, p.(providers.Confirmer).Confirm(context.Background(), providers.Item{Body: []byte(`{}`)}), providers.ErrMismatch)
}
