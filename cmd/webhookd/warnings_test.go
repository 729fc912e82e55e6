package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProviderWarnings: each enabled provider whose event status its
// signature does not cover, with the confirmation that closes the gap off,
// gets one start-up warning naming the variable that turned it off; the
// Duitku and Midtrans status checks are on by default.
func TestProviderWarnings(t *testing.T) {
	duitkuOn := []string{"WEBHOOKD_DUITKU_MERCHANT_CODE=DS15782", "WEBHOOKD_DUITKU_API_KEYS=duitku_secret_key"}
	duitkuOff := []string{"WEBHOOKD_DUITKU_VERIFY_STATUS=false"}
	midtransOn := []string{"WEBHOOKD_MIDTRANS_SERVER_KEY=SB-Mid-server-x", "WEBHOOKD_MIDTRANS_API_URL=https://api.sandbox.midtrans.com"}
	midtransOff := []string{"WEBHOOKD_MIDTRANS_VERIFY_STATUS=false"}
	paypalOn := []string{"WEBHOOKD_PAYPAL_WEBHOOK_IDS=8PT597110X687430LKGECATA"}
	shared := []string{"WEBHOOKD_STORE=postgres", "WEBHOOKD_POSTGRES_DSN=postgres://localhost/x"}
	tiered := []string{"WEBHOOKD_STORE=tiered", "WEBHOOKD_POSTGRES_DSN=postgres://localhost/x"}
	paypalConfirmed := []string{"WEBHOOKD_PAYPAL_CLIENT_ID=id", "WEBHOOKD_PAYPAL_CLIENT_SECRET=paypal_secret"}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name    string
		environ []string
		want    []string // the variable each warning names, in table order
	}{
		{"nothing enabled", nil, nil},
		{"duitku, status check on by default", duitkuOn, nil},
		{"duitku without the status check", join(duitkuOn, duitkuOff), []string{"WEBHOOKD_DUITKU_VERIFY_STATUS=false"}},
		{"duitku with the status check", join(duitkuOn, []string{"WEBHOOKD_DUITKU_VERIFY_STATUS=true"}), nil},
		{"midtrans, status check on by default", midtransOn, nil},
		{"midtrans without the status check", join(midtransOn, midtransOff), []string{"WEBHOOKD_MIDTRANS_VERIFY_STATUS=false"}},
		{"midtrans with the status check", join(midtransOn, []string{"WEBHOOKD_MIDTRANS_VERIFY_STATUS=true"}), nil},
		{"paypal on one node", paypalOn, nil},
		{"paypal on a shared store", join(paypalOn, shared), []string{"WEBHOOKD_PAYPAL_CLIENT_ID"}},
		{"paypal on a tiered store", join(paypalOn, tiered), []string{"WEBHOOKD_PAYPAL_CLIENT_ID"}},
		{"paypal confirmed on a shared store", join(paypalOn, shared, paypalConfirmed), nil},
		{"a shared store without paypal", shared, nil},
		{"all three", join(midtransOn, midtransOff, duitkuOn, duitkuOff, paypalOn, shared),
			[]string{"WEBHOOKD_MIDTRANS_VERIFY_STATUS", "WEBHOOKD_DUITKU_VERIFY_STATUS", "WEBHOOKD_PAYPAL_CLIENT_ID"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfigFrom(append([]string{"WEBHOOKD_DOWNSTREAM_URL=http://localhost:9000/"}, tt.environ...))
			require.NoError(t, err)
			require.NoError(t, cfg.checkServe())
			got := cfg.providerWarnings()
			require.Len(t, got, len(tt.want), "%q", got)
			for i, w := range got {
				require.Contains(t, w, tt.want[i])
				require.NotContains(t, w, "secret", "no secret is quoted")
			}
		})
	}
}

// TestServeLogsProviderWarnings: serve logs the warnings at WARN before it
// listens.
func TestServeLogsProviderWarnings(t *testing.T) {
	clearEnv(t)
	t.Setenv("WEBHOOKD_DOWNSTREAM_URL", "http://localhost:9000/")
	t.Setenv("WEBHOOKD_DATA_DIR", t.TempDir())
	t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
	t.Setenv("WEBHOOKD_ADMIN_ADDR", "")
	t.Setenv("WEBHOOKD_DUITKU_MERCHANT_CODE", "DS15782")
	t.Setenv("WEBHOOKD_DUITKU_API_KEYS", "duitku_k")
	t.Setenv("WEBHOOKD_DUITKU_VERIFY_STATUS", "false")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // start, then stop at once
	var stderr bytes.Buffer
	require.Zero(t, run(ctx, []string{"serve"}, &bytes.Buffer{}, &stderr), stderr.String())
	var warn string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "WEBHOOKD_DUITKU_VERIFY_STATUS") {
			warn = line
		}
	}
	require.NotEmpty(t, warn, "stderr:\n%s", stderr.String())
	require.Contains(t, warn, "WARN")
}
