package paypal

import (
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// Settings are PayPal's variables in webhookd (the command adds its
// WEBHOOKD_ prefix to each name).
type Settings struct {
	WebhookIDs []string `envconfig:"PAYPAL_WEBHOOK_IDS" desc:"comma-separated webhook ids from the PayPal developer dashboard; enables /webhooks/paypal"`
	CertHosts  []string `envconfig:"PAYPAL_CERT_HOSTS" default:"api.paypal.com,api.sandbox.paypal.com" desc:"hosts PAYPAL-CERT-URL may name (host, or host:port for another port than 443; https only, plain http only for a loopback host)"`
	CAFile     string   `envconfig:"PAYPAL_CA_FILE" desc:"PEM file of the roots PayPal's signing certificate must chain to, instead of the system roots"`
	// Tolerance and TransmissionCache bound what one captured signature
	// can do: PayPal's signature covers the body only through CRC-32.
	Tolerance         time.Duration `envconfig:"PAYPAL_TOLERANCE" default:"96h" desc:"how far PAYPAL-TRANSMISSION-TIME may be from now (PayPal retries for 3 days without saying whether a retry is signed afresh)"`
	TransmissionCache int           `envconfig:"PAYPAL_TRANSMISSION_CACHE" default:"100000" desc:"transmissions remembered with the digest of their body (about 200 bytes each), to refuse a second body under one signature"`
	ClientID          string        `envconfig:"PAYPAL_CLIENT_ID" desc:"REST app client id; with the client secret, confirms each delivery with PayPal's API before forwarding it (recommended)"`
	ClientSecret      string        `envconfig:"PAYPAL_CLIENT_SECRET" desc:"REST app client secret, for the confirmation"`
	APIURL            string        `envconfig:"PAYPAL_API_URL" default:"https://api-m.paypal.com" desc:"PayPal API the confirmation asks (sandbox: https://api-m.sandbox.paypal.com)"`
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
		SignedBody: true, SignedType: true,
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
	v := func(name, format string, args ...any) error {
		return fmt.Errorf("%s: %s", env.Var(name), fmt.Sprintf(format, args...))
	}
	switch {
	case s.Tolerance < 0:
		return v("PAYPAL_TOLERANCE", "must not be negative")
	case s.Tolerance > 0 && s.Tolerance < time.Second:
		// PAYPAL-TRANSMISSION-TIME counts whole seconds.
		return v("PAYPAL_TOLERANCE", "%s is shorter than 1s: transmission times count whole seconds, so genuine events would be refused", s.Tolerance)
	case s.TransmissionCache < 0:
		return v("PAYPAL_TRANSMISSION_CACHE", "must not be negative")
	}
	if len(s.WebhookIDs) > 0 {
		// 0 is DefaultTolerance (New), which must be below the retention too.
		tolerance := s.Tolerance
		if tolerance == 0 {
			tolerance = DefaultTolerance
		}
		if err := env.BelowRetention("PAYPAL_TOLERANCE", tolerance); err != nil {
			return err
		}
	}
	if s.APIURL != "" {
		if _, err := ParseAPIURL(s.APIURL); err != nil {
			return v("PAYPAL_API_URL", "%v", err)
		}
	}
	// The secret is never quoted.
	for name, val := range map[string]string{"PAYPAL_CLIENT_ID": s.ClientID, "PAYPAL_CLIENT_SECRET": s.ClientSecret} {
		if strings.TrimSpace(val) != val {
			return v(name, "has leading or trailing white space")
		}
	}
	switch {
	case s.ClientID == "" && s.ClientSecret == "":
		return nil
	case s.ClientID == "":
		return v("PAYPAL_CLIENT_SECRET", "needs %s", env.Var("PAYPAL_CLIENT_ID"))
	case s.ClientSecret == "":
		return v("PAYPAL_CLIENT_ID", "needs %s", env.Var("PAYPAL_CLIENT_SECRET"))
	}
	// The confirmation runs under the claim, before the forward.
	return statusapi.CheckLease(env, "PayPal confirmation", DefaultConfirmTimeout)
}

// Warnings implements providers.Warner: PayPal's signature covers the body
// only through its CRC-32, and the defence against a second body under one
// transmission (TransmissionCache) lives in each process's memory. With a
// store shared by several nodes (env.SharedStore) a forged body sent to
// another node is not refused unless each delivery is confirmed with
// PayPal's API (client id and secret).
func (s *Settings) Warnings(env providers.Env) []string {
	if len(s.WebhookIDs) == 0 || !env.SharedStore || (s.ClientID != "" && s.ClientSecret != "") {
		return nil
	}
	return []string{fmt.Sprintf("paypal: with a store shared by several nodes, the per-process transmission cache cannot stop a CRC-32 forgery of a captured delivery sent to another node; set %s and %s to confirm each delivery with PayPal's API", env.Var("PAYPAL_CLIENT_ID"), env.Var("PAYPAL_CLIENT_SECRET"))}
}

// Build returns the adapter when at least one webhook id is set.
func (s *Settings) Build() (providers.Provider, error) {
	if len(s.WebhookIDs) == 0 {
		return nil, nil
	}
	opts := []Option{WithTolerance(s.Tolerance), WithTransmissionCache(s.TransmissionCache)}
	if s.ClientID != "" || s.ClientSecret != "" {
		api := s.APIURL
		if api == "" {
			api = DefaultAPIURL
		}
		opts = append(opts, WithConfirmation(api, s.ClientID, s.ClientSecret))
	}
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
