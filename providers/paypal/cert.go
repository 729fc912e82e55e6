package paypal

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// checkCertURL parses PAYPAL-CERT-URL and refuses it unless it is https, or
// http to a loopback host, with no user info, on an allowed host and port.
func (a *Adapter) checkCertURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Host == "" || u.Opaque != "" {
		return nil, ErrCertURL
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	switch u.Scheme {
	case "https":
	case "http":
		if !statusapi.IsLoopback(host) {
			return nil, fmt.Errorf("%w (plain http to a host that is not loopback)", ErrCertURL)
		}
	default:
		return nil, ErrCertURL
	}
	defaultPort := map[string]string{"https": "443", "http": "80"}[u.Scheme]
	for _, allowed := range a.certHosts {
		h, p, err := net.SplitHostPort(allowed)
		if err != nil { // no port: the scheme's default only
			h, p = strings.Trim(allowed, "[]"), ""
		}
		if h != host {
			continue
		}
		if p == port || p == "" && port == defaultPort || p == defaultPort && port == "" {
			return u, nil
		}
	}
	return nil, ErrCertURL
}

// certificate returns the checked leaf certificate at u: from the cache
// while it is valid, else fetched (one fetch per URL at a time; callers of
// the same URL wait for it).
func (a *Adapter) certificate(ctx context.Context, u *url.URL) (*x509.Certificate, error) {
	key := u.String()
	leaf, err := a.cache.get(ctx, key, func() (*x509.Certificate, error) { return a.fetch(ctx, u) })
	if err != nil {
		return nil, err
	}
	if now := a.now(); now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		a.cache.forget(key)
		return nil, ErrCertExpired
	}
	return leaf, nil
}

// fetch downloads and checks the certificate chain at u.
func (a *Adapter) fetch(ctx context.Context, u *url.URL) (*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, a.fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, ErrCertURL
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", ErrCertUnavailable, fetchFailure(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w (answered %d)", ErrCertUnavailable, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w (answered %d)", ErrCertRefused, resp.StatusCode)
	}
	chain, err := io.ReadAll(io.LimitReader(resp.Body, MaxCertBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w (reading the answer: %s)", ErrCertUnavailable, fetchFailure(err))
	case len(chain) > MaxCertBytes:
		return nil, fmt.Errorf("%w (answer larger than %d bytes)", ErrCertUnavailable, MaxCertBytes)
	}
	return a.checkChain(chain)
}

// fetchFailure names a transport failure without its URL (the header's
// text is not repeated into answers or logs).
func fetchFailure(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

// checkChain parses a PEM chain, leaf first, and checks the leaf: an RSA
// key, valid now, chaining to the roots through the chain's other
// certificates, and named as PayPal's message-verification certificate.
func (a *Adapter) checkChain(chain []byte) (*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := chain; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, ErrBadCert
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, ErrBadCert
	}
	leaf := certs[0]
	if _, ok := leaf.PublicKey.(*rsa.PublicKey); !ok {
		return nil, ErrBadCert
	}
	now := a.now()
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return nil, ErrCertExpired
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{
		Roots:         a.roots,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, ErrUntrustedCert
	}
	if !isMessageVerificationCert(leaf) {
		return nil, ErrForeignCert
	}
	return leaf, nil
}

// isMessageVerificationCert applies the rule of PayPal's Java SDK
// (SSLUtil.validateCertificateChain): the leaf's common name starts with
// "messageverificationcerts" and ends with ".paypal.com"
// (messageverificationcerts.paypal.com, and
// messageverificationcerts.sandbox.paypal.com for the sandbox). A DNS name
// in the certificate's alternative names counts as well, each checked the
// same way.
func isMessageVerificationCert(c *x509.Certificate) bool {
	names := append([]string{c.Subject.CommonName}, c.DNSNames...)
	for _, n := range names {
		n = strings.ToLower(n)
		if strings.HasPrefix(n, "messageverificationcerts.") && strings.HasSuffix(n, ".paypal.com") {
			return true
		}
	}
	return false
}

// certCache keeps checked leaf certificates by URL, at most max of them.
// Only successes are kept: a failed fetch is tried again by the next
// delivery.
type certCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*certEntry
}

type certEntry struct {
	ready chan struct{} // closed once leaf or err is set
	leaf  *x509.Certificate
	err   error
}

func newCertCache(max int) *certCache {
	if max <= 0 {
		max = DefaultCacheSize
	}
	return &certCache{max: max, entries: map[string]*certEntry{}}
}

// get returns the cached certificate of key, or runs fetch once for all the
// callers that ask for key meanwhile. A caller whose ctx ends first stops
// waiting with ErrCertUnavailable.
func (c *certCache) get(ctx context.Context, key string, fetch func() (*x509.Certificate, error)) (*x509.Certificate, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &certEntry{ready: make(chan struct{})}
		c.evictLocked()
		c.entries[key] = e
	}
	c.mu.Unlock()
	if !ok {
		e.leaf, e.err = fetch()
		if e.err != nil {
			c.mu.Lock()
			if c.entries[key] == e {
				delete(c.entries, key)
			}
			c.mu.Unlock()
		}
		close(e.ready)
	}
	select {
	case <-e.ready:
		return e.leaf, e.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w (%s)", ErrCertUnavailable, fetchFailure(ctx.Err()))
	}
}

// forget drops key, so that its certificate is fetched again.
func (c *certCache) forget(key string) {
	c.mu.Lock()
	delete(c.entries, key)
	c.mu.Unlock()
}

// evictLocked makes room for one entry by dropping a finished one.
func (c *certCache) evictLocked() {
	if len(c.entries) < c.max {
		return
	}
	for k, e := range c.entries {
		select {
		case <-e.ready:
			delete(c.entries, k)
			return
		default:
		}
	}
}
