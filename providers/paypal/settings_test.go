package paypal_test

import (
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
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }}
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
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, tt.s.Check(env), tt.err)
		})
	}

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
		require.NoError(t, p.Verify(srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body), body))

		s.CAFile = ""
		p, err = s.Build()
		require.NoError(t, err)
		require.ErrorIs(t, p.Verify(srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body), body), paypal.ErrUntrustedCert, "the system roots do not know the test CA")
	})
}
