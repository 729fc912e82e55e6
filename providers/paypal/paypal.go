package paypal

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Name is the adapter's route segment and event key prefix.
const Name = "paypal"

// The transmission headers PayPal sends.
const (
	HeaderTransmissionID   = "Paypal-Transmission-Id"
	HeaderTransmissionTime = "Paypal-Transmission-Time"
	HeaderTransmissionSig  = "Paypal-Transmission-Sig"
	HeaderCertURL          = "Paypal-Cert-Url"
	HeaderAuthAlgo         = "Paypal-Auth-Algo"
)

// AuthAlgo is the only PAYPAL-AUTH-ALGO accepted.
const AuthAlgo = "SHA256withRSA"

// DefaultCertHosts are the hosts PAYPAL-CERT-URL may name unless
// WithCertHosts says otherwise: PayPal's live and sandbox APIs.
var DefaultCertHosts = []string{"api.paypal.com", "api.sandbox.paypal.com"}

// Bounds of a certificate fetch.
const (
	// DefaultFetchTimeout bounds one certificate fetch, answer included.
	DefaultFetchTimeout = 10 * time.Second
	// MaxCertBytes bounds the PEM chain read from PAYPAL-CERT-URL; PayPal's
	// is about 3 KiB per certificate.
	MaxCertBytes = 64 << 10
	// DefaultCacheSize is how many certificates are kept, by URL. PayPal
	// signs with one certificate at a time; a few URLs live at once around
	// a rotation.
	DefaultCacheSize = 16
)

// Bounds of a transmission's life.
const (
	// DefaultTolerance is how far PAYPAL-TRANSMISSION-TIME may be from now.
	// PayPal retries a delivery 25 times over 3 days and does not document
	// whether a retry is signed afresh, so the window covers the 3 days of
	// retries with a day to spare: a captured signature is usable for 4
	// days, not forever.
	DefaultTolerance = 96 * time.Hour
	// DefaultTransmissionCache is how many transmissions are remembered
	// (transmission id to body digest) to refuse a second body under one
	// signature: about 20 MB.
	DefaultTransmissionCache = 100_000
)

// Adapter verifies and parses PayPal webhook deliveries. Build one with New;
// an Adapter is safe for concurrent use. The zero value rejects every
// delivery.
type Adapter struct {
	webhookIDs   []string
	certHosts    []string
	client       *http.Client
	roots        *x509.CertPool // nil: the system roots
	now          func() time.Time
	fetchTimeout time.Duration
	cache        *certCache
	tolerance    time.Duration
	seen         *transmissions

	// Confirmation with PayPal's API (WithConfirmation); api is nil
	// without it.
	api            *url.URL
	clientID       string
	clientSecret   string
	confirmTimeout time.Duration
	token          tokenCache
}

var (
	_ providers.Provider  = (*Adapter)(nil)
	_ providers.Confirmer = (*Adapter)(nil)
)

// Option configures an Adapter.
type Option = adapter.Option[Adapter]

// WithCertHosts replaces DefaultCertHosts: the hosts PAYPAL-CERT-URL may
// name, each a host name or IP ("api.paypal.com"), which allows the
// scheme's default port only, or host:port, which allows that port.
func WithCertHosts(hosts []string) Option {
	return func(a *Adapter) error {
		a.certHosts = hosts
		return nil
	}
}

// WithRoots sets the roots PayPal's certificate must chain to instead of the
// system roots (WEBHOOKD_PAYPAL_CA_FILE; tests give a test CA).
func WithRoots(roots *x509.CertPool) Option {
	return func(a *Adapter) error {
		a.roots = roots
		return nil
	}
}

// WithClient sets the HTTP client that fetches certificates (tests give
// httptest's). Its redirect policy is replaced: no redirect is followed.
func WithClient(c *http.Client) Option {
	return func(a *Adapter) error {
		a.client = c
		return nil
	}
}

// WithClock sets the clock certificates are checked against.
func WithClock(now func() time.Time) Option {
	return func(a *Adapter) error {
		a.now = now
		return nil
	}
}

// WithFetchTimeout bounds one certificate fetch (DefaultFetchTimeout).
func WithFetchTimeout(d time.Duration) Option {
	return func(a *Adapter) error {
		a.fetchTimeout = d
		return nil
	}
}

// WithCacheSize sets how many certificates are kept (DefaultCacheSize).
func WithCacheSize(n int) Option {
	return func(a *Adapter) error {
		a.cache = newCertCache(n)
		return nil
	}
}

// WithTolerance sets how far PAYPAL-TRANSMISSION-TIME may be from now, in
// either direction (DefaultTolerance); a transmission outside it is
// refused with ErrTransmissionTime.
func WithTolerance(d time.Duration) Option {
	return func(a *Adapter) error {
		a.tolerance = d
		return nil
	}
}

// WithTransmissionCache sets how many verified transmissions are
// remembered, each with the digest of its body (DefaultTransmissionCache).
func WithTransmissionCache(n int) Option {
	return func(a *Adapter) error {
		a.seen = newTransmissions(n)
		return nil
	}
}

// New returns an Adapter that accepts deliveries signed by PayPal for any of
// webhookIDs (the ids of the webhooks in the PayPal developer dashboard).
// It refuses an empty list, an empty id, one with surrounding white space
// or a "|" (the signed string's separator), and a cert host that is not a
// host name or host:port.
func New(webhookIDs []string, opts ...Option) (*Adapter, error) {
	if len(webhookIDs) == 0 {
		return nil, errors.New("paypal: no webhook id configured")
	}
	for i, id := range webhookIDs {
		switch {
		case id == "":
			return nil, fmt.Errorf("paypal: webhook id %d of %d is empty", i+1, len(webhookIDs))
		case strings.TrimSpace(id) != id || strings.Contains(id, "|"):
			return nil, fmt.Errorf("paypal: webhook id %d of %d has white space around it or a |", i+1, len(webhookIDs))
		}
	}
	a := &Adapter{
		webhookIDs:   append([]string(nil), webhookIDs...),
		certHosts:    DefaultCertHosts,
		now:          time.Now,
		fetchTimeout: DefaultFetchTimeout,
	}
	for _, o := range opts {
		o(a)
	}
	for _, h := range a.certHosts {
		if err := CheckCertHost(h); err != nil {
			return nil, err
		}
	}
	if a.client == nil {
		a.client = &http.Client{Transport: http.DefaultTransport}
	}
	// A copy, so the caller's client keeps its own policy: a certificate
	// URL on an allowed host must not lead anywhere else.
	c := *a.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	a.client = &c
	if a.cache == nil {
		a.cache = newCertCache(DefaultCacheSize)
	}
	if a.fetchTimeout <= 0 {
		a.fetchTimeout = DefaultFetchTimeout
	}
	if a.tolerance <= 0 {
		a.tolerance = DefaultTolerance
	}
	if a.seen == nil {
		a.seen = newTransmissions(DefaultTransmissionCache)
	}
	if err := a.checkConfirmation(); err != nil {
		return nil, err
	}
	return a, nil
}

// Name returns "paypal".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, a.event)
}

// CheckCertHost returns an error unless h is a lower-case host name or IP,
// optionally with a port: an item of WEBHOOKD_PAYPAL_CERT_HOSTS.
func CheckCertHost(h string) error {
	host, port := h, ""
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		var err error
		if host, port, err = net.SplitHostPort(h); err != nil || port == "" {
			return fmt.Errorf("paypal: cert host %q is not host or host:port", h)
		}
	}
	if host == "" || strings.ToLower(host) != host || strings.ContainsAny(host, "/@?#% ") {
		return fmt.Errorf("paypal: cert host %q is not a lower-case host name", h)
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return fmt.Errorf("paypal: cert host %q has a bad port", h)
		}
	}
	return nil
}
