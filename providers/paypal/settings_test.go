package paypal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
)

func TestSettings(t *testing.T) {
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }, Lease: time.Minute, DispatchTimeout: 45 * time.Second, StoreCalls: 10 * time.Second}
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o644))
	for _, tt := range []struct {
		name string
		s    paypal.Settings
		err  string
	}{
		{"cert host with a scheme", paypal.Settings{CertHosts: []string{"https://api.paypal.com"}}, "WEBHOOKD_PAYPAL_CERT_HOSTS: paypal: cert host"},
		{"CA file missing", paypal.Settings{CAFile: filepath.Join(dir, "nope.pem")}, "WEBHOOKD_PAYPAL_CA_FILE: open"},
		{"CA file without a certificate", paypal.Settings{CAFile: notPEM}, "WEBHOOKD_PAYPAL_CA_FILE: " + notPEM + " holds no PEM certificate"},
		{"negative tolerance", paypal.Settings{Tolerance: -time.Minute}, "WEBHOOKD_PAYPAL_TOLERANCE: must not be negative"},
		{"negative cache", paypal.Settings{TransmissionCache: -1}, "WEBHOOKD_PAYPAL_TRANSMISSION_CACHE: must not be negative"},
		{"API URL over plain http", paypal.Settings{APIURL: "http://api-m.paypal.com"}, "WEBHOOKD_PAYPAL_API_URL: paypal: API URL must use https"},
		{"client id without secret", paypal.Settings{ClientID: clientID}, "WEBHOOKD_PAYPAL_CLIENT_ID: needs WEBHOOKD_PAYPAL_CLIENT_SECRET"},
		{"client secret without id", paypal.Settings{ClientSecret: clientSecret}, "WEBHOOKD_PAYPAL_CLIENT_SECRET: needs WEBHOOKD_PAYPAL_CLIENT_ID"},
		{"client secret with white space", paypal.Settings{ClientID: clientID, ClientSecret: clientSecret + " "}, "WEBHOOKD_PAYPAL_CLIENT_SECRET: has leading or trailing white space"},
		{"lease too short for the confirmation", paypal.Settings{ClientID: clientID, ClientSecret: clientSecret}, "WEBHOOKD_LEASE: 1m0s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (45s) plus the PayPal confirmation (10s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, tt.s.Check(env), tt.err)
		})
	}

	// A transmission time older than the retention is 401, tolerance set
	// or not: 0 is DefaultTolerance, which must be below the retention too.
	t.Run("tolerance below the retention", func(t *testing.T) {
		short := env
		short.Retention = 72 * time.Hour
		for _, tt := range []struct {
			tolerance time.Duration
			err       string
		}{
			{0, "WEBHOOKD_PAYPAL_TOLERANCE: 96h0m0s must be shorter than WEBHOOKD_RETENTION (72h0m0s)"},
			{72 * time.Hour, "WEBHOOKD_PAYPAL_TOLERANCE: 72h0m0s must be shorter than WEBHOOKD_RETENTION (72h0m0s)"},
			{71 * time.Hour, ""},
		} {
			err := (&paypal.Settings{WebhookIDs: []string{webhookID}, Tolerance: tt.tolerance}).Check(short)
			if tt.err == "" {
				require.NoError(t, err)
				continue
			}
			require.ErrorContains(t, err, tt.err)
		}
	})

	t.Run("off without webhook ids", func(t *testing.T) {
		p, err := (&paypal.Settings{CertHosts: paypal.DefaultCertHosts}).Build()
		require.NoError(t, err)
		require.Nil(t, p)
	})

	t.Run("CA file and cert hosts are used", func(t *testing.T) {
		srv := paypaltest.NewPlainServer(t)
		ca := filepath.Join(dir, "ca.pem")
		require.NoError(t, os.WriteFile(ca, srv.CAPEM, 0o644))
		s := paypal.Settings{WebhookIDs: []string{webhookID}, CertHosts: []string{srv.Host()}, CAFile: ca}
		require.NoError(t, s.Check(env))
		p, err := s.Build()
		require.NoError(t, err)
		body := readFixture(t, "payment_capture_completed.json")
		require.NoError(t, p.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body), Body: body}))

		s.CAFile = ""
		p, err = s.Build()
		require.NoError(t, err)
		require.ErrorIs(t, p.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body), Body: body}), paypal.ErrUntrustedCert, "the system roots do not know the test CA")
	})

	t.Run("tolerance, cache and confirmation are used", func(t *testing.T) {
		srv := paypaltest.NewPlainServer(t)
		ca := filepath.Join(dir, "ca2.pem")
		require.NoError(t, os.WriteFile(ca, srv.CAPEM, 0o644))
		body := readFixture(t, "payment_capture_completed.json")
		api := newFakeAPI(t, body)
		s := paypal.Settings{WebhookIDs: []string{webhookID}, CertHosts: []string{srv.Host()}, CAFile: ca,
			Tolerance: time.Minute, TransmissionCache: 1, ClientID: clientID, ClientSecret: clientSecret, APIURL: api.URL}
		long := env
		long.Lease = 2 * time.Minute
		require.NoError(t, s.Check(long))
		p, err := s.Build()
		require.NoError(t, err)
		require.ErrorIs(t, p.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now().Add(-2*time.Minute), body), Body: body}), paypal.ErrTransmissionTime)
		require.NoError(t, p.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body), Body: body}))
		require.NoError(t, p.(providers.Confirmer).Confirm(context.Background(), providers.Item{Body: body}))
		require.EqualValues(t, 1, api.lookups.Load())
	})
}
