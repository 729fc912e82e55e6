package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

func TestConfigErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string // the error must start with this
	}{
		{map[string]string{}, "WEBHOOKD_DOWNSTREAM_URL: required"},
		{map[string]string{"WEBHOOKD_DOWNSTREAM_URL": "localhost:9000"}, "WEBHOOKD_DOWNSTREAM_URL: "},
		{map[string]string{"WEBHOOKD_LEASE": "soon"}, "WEBHOOKD_LEASE: cannot parse"},
		{map[string]string{"WEBHOOKD_LEASE": "10s"}, "WEBHOOKD_LEASE: 10s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (10s)"},
		{map[string]string{"WEBHOOKD_DISPATCH_TIMEOUT": "90s"}, "WEBHOOKD_LEASE: "},
		// A lease no longer than the forward is refused as the lease's fault
		// even when the store timeout is set: no store timeout could fit.
		{map[string]string{"WEBHOOKD_LEASE": "10s", "WEBHOOKD_STORE_TIMEOUT": "1s"}, "WEBHOOKD_LEASE: 10s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (10s)"},
		// A store timeout the operator sets must fit in the lease with the
		// forward: the end of the claim and the record, one timeout each.
		{map[string]string{"WEBHOOKD_LEASE": "11s", "WEBHOOKD_STORE_TIMEOUT": "5s"}, "WEBHOOKD_STORE_TIMEOUT: 5s is too long"},
		{map[string]string{"WEBHOOKD_LEASE": "20s", "WEBHOOKD_STORE_TIMEOUT": "5s"}, "WEBHOOKD_STORE_TIMEOUT: 5s is too long"},
		{map[string]string{"WEBHOOKD_STORE_TIMEOUT": "25s"}, "WEBHOOKD_STORE_TIMEOUT: 25s is too long"},
		{map[string]string{"WEBHOOKD_DISPATCH_TIMEOUT": "0s"}, "WEBHOOKD_DISPATCH_TIMEOUT: must be positive"},
		{map[string]string{"WEBHOOKD_DISPATCH_RETRIES": "-1"}, "WEBHOOKD_DISPATCH_RETRIES: "},
		{map[string]string{"WEBHOOKD_STORE_TIMEOUT": "0s"}, "WEBHOOKD_STORE_TIMEOUT: must be positive"},
		{map[string]string{"WEBHOOKD_STORE_TIMEOUT": "soon"}, "WEBHOOKD_STORE_TIMEOUT: cannot parse"},
		{map[string]string{"WEBHOOKD_MAX_BODY_BYTES": "1MB"}, "WEBHOOKD_MAX_BODY_BYTES: cannot parse"},
		{map[string]string{"WEBHOOKD_MAX_BODY_BYTES": "0"}, "WEBHOOKD_MAX_BODY_BYTES: must be positive"},
		{map[string]string{"WEBHOOKD_MAX_PENDING_BODY_BYTES": "1048575"}, "WEBHOOKD_MAX_PENDING_BODY_BYTES: 1048575 is smaller than WEBHOOKD_MAX_BODY_BYTES (1048576)"},
		{map[string]string{"WEBHOOKD_MAX_PENDING_BODY_BYTES": "100", "WEBHOOKD_MAX_BODY_BYTES": "200"}, "WEBHOOKD_MAX_PENDING_BODY_BYTES: 100 is smaller"},
		{map[string]string{"WEBHOOKD_RETENTION": "876001h"}, "WEBHOOKD_RETENTION: 876001h is longer than 876000h0m0s (100 years)"},
		{map[string]string{"WEBHOOKD_MAX_MAP_SIZE": "9223372036854775807"}, "WEBHOOKD_MAX_MAP_SIZE: 9223372036854775807 is more than 70368744177664 (64 TiB)"},
		{map[string]string{"WEBHOOKD_MAX_READERS": "9223372036854775807"}, "WEBHOOKD_MAX_READERS: 9223372036854775807 is more than 1048576"},
		{map[string]string{"WEBHOOKD_RETENTION": "-1h"}, "WEBHOOKD_RETENTION: "},
		{map[string]string{"WEBHOOKD_STRIPE_TOLERANCE": "0s"}, "WEBHOOKD_STRIPE_TOLERANCE: "},
		{map[string]string{"WEBHOOKD_STRIPE_TOLERANCE": "500ms"}, "WEBHOOKD_STRIPE_TOLERANCE: 500ms is shorter than 1s"},
		{map[string]string{"WEBHOOKD_PAYPAL_TOLERANCE": "500ms"}, "WEBHOOKD_PAYPAL_TOLERANCE: 500ms is shorter than 1s"},
		{map[string]string{"WEBHOOKD_DISPATCH_TIMEOUT": "999us"}, "WEBHOOKD_DISPATCH_TIMEOUT: 999µs is shorter than 1ms"},
		{map[string]string{"WEBHOOKD_STORE_TIMEOUT": "999us"}, "WEBHOOKD_STORE_TIMEOUT: 999µs is shorter than 1ms"},
		{map[string]string{"WEBHOOKD_LEASE": "10002ms"}, "WEBHOOKD_LEASE: 10.002s leaves less than 3ms beyond WEBHOOKD_DISPATCH_TIMEOUT (10s)"},
		{map[string]string{"WEBHOOKD_FAILED_POLICY": "drop"}, "WEBHOOKD_FAILED_POLICY: "},
		{map[string]string{"WEBHOOKD_STORE": "postgres"}, "WEBHOOKD_POSTGRES_DSN: required by WEBHOOKD_STORE=postgres"},
		{map[string]string{"WEBHOOKD_STORE": "tiered", "WEBHOOKD_POSTGRES_DSN": " "}, "WEBHOOKD_POSTGRES_DSN: required by WEBHOOKD_STORE=tiered"},
		{map[string]string{"WEBHOOKD_STORE": "redis"}, "WEBHOOKD_STORE: "},
		{map[string]string{"WEBHOOKD_STRIPE_SECRETS": "whsec_a,,whsec_b"}, "WEBHOOKD_STRIPE_SECRETS: "},
		{map[string]string{"WEBHOOKD_LOG_FORMAT": "xml"}, "WEBHOOKD_LOG_FORMAT: "},
		{map[string]string{"WEBHOOKD_LOG_LEVEL": "loud"}, "WEBHOOKD_LOG_LEVEL: "},
		// Profiles are for the host only: no wildcard, no routable address,
		// no name that might resolve elsewhere.
		{map[string]string{"WEBHOOKD_PPROF_ADDR": ":6060"}, "WEBHOOKD_PPROF_ADDR: "},
		{map[string]string{"WEBHOOKD_PPROF_ADDR": "0.0.0.0:6060"}, "WEBHOOKD_PPROF_ADDR: "},
		{map[string]string{"WEBHOOKD_PPROF_ADDR": "10.0.0.1:6060"}, "WEBHOOKD_PPROF_ADDR: "},
		{map[string]string{"WEBHOOKD_PPROF_ADDR": "localhost:6060"}, "WEBHOOKD_PPROF_ADDR: "},
		{map[string]string{"WEBHOOKD_PPROF_ADDR": "127.0.0.1"}, "WEBHOOKD_PPROF_ADDR: "},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			clearEnv(t)
			if _, ok := tt.env["WEBHOOKD_DOWNSTREAM_URL"]; !ok && len(tt.env) > 0 {
				t.Setenv("WEBHOOKD_DOWNSTREAM_URL", "http://localhost:9000/")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"serve"}, &bytes.Buffer{}, &stderr)
			require.NotZero(t, code)
			line := strings.TrimPrefix(stderr.String(), "webhookd: configuration: ")
			require.True(t, strings.HasPrefix(line, tt.want), "got %q", stderr.String())
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line")
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	clearEnv(t)
	t.Setenv("WEBHOOKD_STRIPE_SECRETS", " whsec_a , whsec_b")
	c, err := loadConfig()
	require.NoError(t, err)
	require.Equal(t, ":8080", c.Addr)
	require.Equal(t, "./data", c.DataDir)
	// Both secrets, trimmed, verify: the list was split as written.
	stripeP, err := providerSettings[*spec.Settings](t, c, "stripe").Build()
	require.NoError(t, err)
	for _, secret := range []string{"whsec_a", "whsec_b"} {
		body := []byte(`{"id":"evt_defaults","object":"event"}`)
		h := http.Header{"Stripe-Signature": {stripeSignature(t, secret, time.Now(), body)}}
		require.NoError(t, stripeP.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), secret)
		// Five minutes is the default tolerance.
		h = http.Header{"Stripe-Signature": {stripeSignature(t, secret, time.Now().Add(-5*time.Minute-time.Second), body)}}
		require.Equal(t, providers.ReasonTimestamp, providers.Reason(stripeP.Verify(context.Background(), providers.Delivery{Header: h, Body: body})))
	}
	require.Equal(t, 60*time.Second, c.Lease)
	require.Equal(t, int64(1048576), c.MaxBodyBytes)
	require.Equal(t, int64(64<<20), c.MaxPendingBodies)
	require.Equal(t, 2, c.DispatchRetries)
	require.Equal(t, "replay", c.FailedPolicy)
	require.Equal(t, "lmdb", c.Store)
	require.Equal(t, 168*time.Hour, c.Retention)
	require.Equal(t, 10*time.Second, c.DispatchTimeout)
	require.Equal(t, 5*time.Second, c.StoreTimeout)
	require.Equal(t, 10*time.Second, c.ShutdownGrace, "defaults to the dispatch timeout")
}

// TestStoreTimeoutFollowsTheLease: unset, the store timeout is derived so
// that the forward and the store's two calls fit in the lease; the only lease
// refusal left is the contract's, a lease no longer than the forward.
func TestStoreTimeoutFollowsTheLease(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want time.Duration // the store timeout; 0 when refused
		err  string        // the error must start with this
	}{
		{"defaults", map[string]string{}, 5 * time.Second, ""},
		{"short lease", map[string]string{"WEBHOOKD_LEASE": "3s", "WEBHOOKD_DISPATCH_TIMEOUT": "1s"}, 666666666 * time.Nanosecond, ""},
		{"empty means derived", map[string]string{"WEBHOOKD_LEASE": "3s", "WEBHOOKD_DISPATCH_TIMEOUT": "1s", "WEBHOOKD_STORE_TIMEOUT": ""}, 666666666 * time.Nanosecond, ""},
		{"capped at 5s", map[string]string{"WEBHOOKD_LEASE": "10m"}, 5 * time.Second, ""},
		{"explicit", map[string]string{"WEBHOOKD_LEASE": "3s", "WEBHOOKD_DISPATCH_TIMEOUT": "1s", "WEBHOOKD_STORE_TIMEOUT": "900ms"}, 900 * time.Millisecond, ""},
		{"lease equals dispatch", map[string]string{"WEBHOOKD_LEASE": "10s", "WEBHOOKD_DISPATCH_TIMEOUT": "10s"}, 0,
			"WEBHOOKD_LEASE: 10s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (10s)"},
		{"explicit too long", map[string]string{"WEBHOOKD_LEASE": "11s", "WEBHOOKD_DISPATCH_TIMEOUT": "10s", "WEBHOOKD_STORE_TIMEOUT": "5s"}, 0,
			"WEBHOOKD_STORE_TIMEOUT: 5s is too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := loadConfig()
			if tt.err != "" {
				require.Error(t, err)
				require.True(t, strings.HasPrefix(err.Error(), tt.err), "got %q", err)
				require.NotContains(t, err.Error(), "\n", "one line")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, c.StoreTimeout)
			require.Equal(t, 2*tt.want, c.providerEnv().StoreCalls, "provider checks add the store's two calls")
			require.Greater(t, c.Lease, c.DispatchTimeout+2*c.StoreTimeout, "the store's calls fit in the lease")
		})
	}
}

func TestLeaseJustLongerThanItsCallsIsAccepted(t *testing.T) {
	clearEnv(t)
	t.Setenv("WEBHOOKD_LEASE", "21s")
	t.Setenv("WEBHOOKD_STORE_TIMEOUT", "5s")
	c, err := loadConfig()
	require.NoError(t, err, "10s forwarding and two 5s store calls fit in 21s")
	require.Equal(t, 21*time.Second, c.Lease)
}

func TestEmptyVariableMeansDefault(t *testing.T) {
	clearEnv(t)
	for _, k := range []string{"WEBHOOKD_ADDR", "WEBHOOKD_LEASE", "WEBHOOKD_MAX_BODY_BYTES", "WEBHOOKD_STORE"} {
		t.Setenv(k, "")
	}
	c, err := loadConfig()
	require.NoError(t, err)
	require.Equal(t, ":8080", c.Addr)
	require.Equal(t, 60*time.Second, c.Lease)
	require.Equal(t, int64(1048576), c.MaxBodyBytes)
	require.Equal(t, "lmdb", c.Store)
}

func TestHelpListsEveryVariable(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		var out bytes.Buffer
		require.Zero(t, run(context.Background(), args, &out, &bytes.Buffer{}))
		for _, v := range []string{"WEBHOOKD_ADDR", "WEBHOOKD_DATA_DIR", "WEBHOOKD_DOWNSTREAM_URL", "WEBHOOKD_STRIPE_SECRETS",
			"WEBHOOKD_STRIPE_TOLERANCE", "WEBHOOKD_MIDTRANS_SERVER_KEY", "WEBHOOKD_XENDIT_CALLBACK_TOKENS", "WEBHOOKD_LEASE",
			"WEBHOOKD_RETENTION", "WEBHOOKD_MAX_BODY_BYTES", "WEBHOOKD_DISPATCH_TIMEOUT", "WEBHOOKD_DISPATCH_RETRIES",
			"WEBHOOKD_FAILED_POLICY", "WEBHOOKD_STORE", "WEBHOOKD_POSTGRES_DSN", "WEBHOOKD_STORE_TIMEOUT"} {
			require.Contains(t, out.String(), v)
		}
		require.Contains(t, out.String(), "168h")
	}
	require.Equal(t, 2, run(context.Background(), []string{"frobnicate"}, &bytes.Buffer{}, &bytes.Buffer{}))
}

// clearEnv unsets every WEBHOOKD_ variable for the test.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "WEBHOOKD_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

// providerSettings returns the settings the configuration holds for the
// provider table entry name.
func providerSettings[T any](t *testing.T, c *config, name string) T {
	t.Helper()
	for _, p := range c.providers {
		if p.entry.Name == name {
			s, ok := p.settings.(T)
			require.True(t, ok, "%s settings are %T", name, p.settings)
			return s
		}
	}
	t.Fatalf("no provider %q in the table", name)
	panic("unreachable")
}

// TestToleranceBelowRetention: a provider's signed timestamp must not be
// accepted for as long as its record is kept or longer, or a capture could
// outlive its record and be forwarded again; Razorpay's created_at, the
// same way, needs the retention to outlast its 24 h of retries. A provider
// that is off is not held to it.
func TestToleranceBelowRetention(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"WEBHOOKD_STRIPE_SECRETS": "whsec_a", "WEBHOOKD_STRIPE_TOLERANCE": "2h"},
			"WEBHOOKD_STRIPE_TOLERANCE: 2h0m0s must be shorter than WEBHOOKD_RETENTION (2h0m0s)"},
		{map[string]string{"WEBHOOKD_STANDARD_SECRETS": "whsec_dGFibGUtdGVzdA==", "WEBHOOKD_STANDARD_TOLERANCE": "3h"},
			"WEBHOOKD_STANDARD_TOLERANCE: 3h0m0s must be shorter than WEBHOOKD_RETENTION (2h0m0s)"},
		{map[string]string{"WEBHOOKD_PADDLE_SECRETS": "pdl_ntfset_a", "WEBHOOKD_PADDLE_TOLERANCE": "2h"},
			"WEBHOOKD_PADDLE_TOLERANCE: 2h0m0s must be shorter than WEBHOOKD_RETENTION (2h0m0s)"},
		{map[string]string{"WEBHOOKD_DOKU_CLIENT_ID": "MCH-1", "WEBHOOKD_DOKU_SECRET_KEYS": "SK-a"},
			"WEBHOOKD_DOKU_TOLERANCE: 24h0m0s must be shorter than WEBHOOKD_RETENTION (2h0m0s)"},
		{map[string]string{"WEBHOOKD_PAYPAL_WEBHOOK_IDS": "8PT597110X687430LKGECATA"},
			"WEBHOOKD_PAYPAL_TOLERANCE: 96h0m0s must be shorter than WEBHOOKD_RETENTION (2h0m0s)"},
		{map[string]string{"WEBHOOKD_RAZORPAY_SECRETS": "rzp_a", "WEBHOOKD_RAZORPAY_MAX_AGE": "25h"},
			"WEBHOOKD_RAZORPAY_MAX_AGE: 25h0m0s must be shorter than WEBHOOKD_RETENTION (2h0m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			environ := []string{"WEBHOOKD_DOWNSTREAM_URL=http://localhost:9000/", "WEBHOOKD_RETENTION=2h"}
			// Off, the same retention is no error of this provider's.
			_, err := loadConfigFrom(environ)
			if err != nil {
				require.NotContains(t, err.Error(), "RETENTION")
			}
			for k, v := range tt.env {
				environ = append(environ, k+"="+v)
			}
			_, err = loadConfigFrom(environ)
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tt.want), "got %q", err)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	// Razorpay's max age unset asks nothing of the retention: the
	// retention is then its bound.
	_, err := loadConfigFrom([]string{"WEBHOOKD_DOWNSTREAM_URL=http://localhost:9000/", "WEBHOOKD_RETENTION=2h",
		"WEBHOOKD_RAZORPAY_SECRETS=rzp_a"})
	require.NoError(t, err)
}

// TestServerCutsStalledClients: every listener's server has the read
// timeouts that give back a stalled upload's share of
// WEBHOOKD_MAX_PENDING_BODY_BYTES, as docs/operating.md says.
func TestServerCutsStalledClients(t *testing.T) {
	srv := newServer(http.NotFoundHandler(), nil, time.Minute)
	require.Equal(t, 10*time.Second, srv.ReadHeaderTimeout)
	require.Equal(t, 30*time.Second, srv.ReadTimeout)
	require.Equal(t, 120*time.Second, srv.IdleTimeout)
	require.Equal(t, 64<<10, srv.MaxHeaderBytes)
}
