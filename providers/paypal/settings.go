package paypal

import (
	"crypto/x509"
	"fmt"
	"os"

	"github.com/webhookd/webhookd/providers"
)

// Settings are PayPal's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	WebhookIDs []string `envconfig:"PAYPAL_WEBHOOK_IDS" desc:"comma-separated webhook ids from the PayPal developer dashboard; enables /webhooks/paypal" example:"8PT597110X687430LKGECATA"`
	CertHosts  []string `envconfig:"PAYPAL_CERT_HOSTS" default:"api.paypal.com,api.sandbox.paypal.com" desc:"hosts PAYPAL-CERT-URL may name (host, or host:port for another port than 443; https only, plain http only for a loopback host)"`
	CAFile     string   `envconfig:"PAYPAL_CA_FILE" desc:"PEM file of the roots PayPal's signing certificate must chain to, instead of the system roots"`
}

// Entry is PayPal's line in webhookd's provider table. PayPal alone can
// sign its deliveries: `webhookd replay` sends fixtures/paypal with the
// captured headers beside each body (<name>.headers.json).
func Entry() providers.Entry {
	return providers.Entry{
		Name:       Name,
		Settings:   func() providers.Settings { return &Settings{} },
		Secret:     "PAYPAL_WEBHOOK_IDS",
		SecretNoun: "webhook id",
	}
}

// Check refuses a cert host that is not a host name or host:port, and a CA
// file that cannot be read or holds no certificate (even while PayPal is
// off, so that enabling it later cannot fail at start).
func (s *Settings) Check(env providers.Env) error {
	for _, h := range s.CertHosts {
		if err := CheckCertHost(h); err != nil {
			return fmt.Errorf("%s: %w", env.Var("PAYPAL_CERT_HOSTS"), err)
		}
	}
	if s.CAFile != "" {
		if _, err := loadRoots(s.CAFile); err != nil {
			return fmt.Errorf("%s: %w", env.Var("PAYPAL_CA_FILE"), err)
		}
	}
	return nil
}

// Build returns the adapter when at least one webhook id is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.WebhookIDs) == 0 {
		return nil, nil
	}
	var opts []Option
	if len(s.CertHosts) > 0 {
		opts = append(opts, WithCertHosts(s.CertHosts))
	}
	if s.CAFile != "" {
		roots, err := loadRoots(s.CAFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithRoots(roots))
	}
	return New(s.WebhookIDs, opts...)
}

func loadRoots(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
