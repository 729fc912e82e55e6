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

	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// CertPathPrefix is the path under which PayPal serves its signing
// certificates (https://api.paypal.com/v1/notifications/certs/CERT-...):
// PAYPAL-CERT-URL may name nothing else on an allowed host.
const CertPathPrefix = "/v1/notifications/certs/"

// checkCertURL parses PAYPAL-CERT-URL and refuses it unless it is https, or
// http to a loopback host, with no user info, query or fragment, on an
// allowed host and port, naming one certificate under CertPathPrefix (a
// name of letters, digits, ".", "_" and "-", not "." or ".."; no
// percent-encoding). Anyone can send a delivery, so anything a sender
// varies without changing the certificate (a query, an encoding, another
// path) would otherwise be a new URL to fetch. It returns the URL and the
// key it is cached under: the URL with its host in lower case and without
// the scheme's default port.
func (a *Adapter) checkCertURL(raw string) (*url.URL, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Host == "" || u.Opaque != "" {
		return nil, "", ErrCertURL
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#%") {
		return nil, "", fmt.Errorf("%w (a query, a fragment or percent-encoding)", ErrCertURL)
	}
	if !isCertPath(u) {
		return nil, "", fmt.Errorf("%w (not a certificate under %s)", ErrCertURL, CertPathPrefix)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	switch u.Scheme {
	case "https":
	case "http":
		if !statusapi.IsLoopback(host) {
			return nil, "", fmt.Errorf("%w (plain http to a host that is not loopback)", ErrCertURL)
		}
	default:
		return nil, "", ErrCertURL
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
			// One key per certificate: the host in lower case, the
			// scheme's default port left out.
			if port != "" && port != defaultPort {
				host = net.JoinHostPort(host, port)
			}
			return u, u.Scheme + "://" + host + u.Path, nil
		}
	}
	return nil, "", ErrCertURL
}

// isCertPath reports whether u's path is CertPathPrefix and one
// certificate name, spelled without percent-encoding.
func isCertPath(u *url.URL) bool {
	if u.RawPath != "" || !strings.HasPrefix(u.Path, CertPathPrefix) {
		return false
	}
	name := u.Path[len(CertPathPrefix):]
	if name == "" || name == "." || name == ".." || len(name) > 200 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// certificate returns the checked leaf certificate at u (cached under key):
// from the cache while it is valid, else fetched (see certCache: one fetch
// per URL at a time, a failure remembered for FailedFetchPause).
func (a *Adapter) certificate(ctx context.Context, u *url.URL, key string) (*x509.Certificate, error) {
	leaf, err := a.cache.get(ctx, key, a.now, func() (*x509.Certificate, error) {
		// Not the caller's context: the fetch is shared by every
		// delivery naming this URL, and its failure is remembered, so one
		// caller hanging up must not fail it for all of them.
		return a.fetch(context.WithoutCancel(ctx), u)
	})
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
