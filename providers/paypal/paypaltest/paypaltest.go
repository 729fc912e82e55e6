// Package paypaltest is a fake PayPal for tests: a test certificate
// authority, PayPal-named signing certificates (good, expired, foreign,
// untrusted) served over TLS by an httptest server that counts its fetches
// and can be taken down, and a signer that signs deliveries the way PayPal
// does with the good certificate's key. Tests give the paypal adapter
// Options() so that it trusts only this fake.
//
// It is test support only: nothing outside _test.go files may import it.
package paypaltest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"hash/crc32"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"crypto"

	"github.com/webhookd/webhookd/providers/paypal"
)

// The certificates the server holds, by the last segment of their URL.
const (
	// Good is PayPal's sandbox message-verification certificate, issued by
	// the test CA through an intermediate, valid for a year around now.
	Good = "CERT-good"
	// Expired is Good's name and key, expired an hour ago.
	Expired = "CERT-expired"
	// Foreign is a certificate of the test CA for another name.
	Foreign = "CERT-foreign"
	// Untrusted is Good's name and key, issued by a CA the roots lack.
	Untrusted = "CERT-untrusted"
	// Oversize answers more than paypal.MaxCertBytes.
	Oversize = "CERT-oversize"
	// Missing answers 404.
	Missing = "CERT-missing"
	// Alias is Good under another URL, as around a rotation.
	Alias = "CERT-good-alias"
	// CopyPrefix starts names that all serve Good's chain: a genuine
	// PayPal certificate under as many URLs as a test needs.
	CopyPrefix = "CERT-copy-"
)

// Server is the fake PayPal certificate host.
type Server struct {
	*httptest.Server
	// Roots holds the test CA: the adapter's WithRoots.
	Roots *x509.CertPool
	// CAPEM is the test CA in PEM, for a WEBHOOKD_PAYPAL_CA_FILE.
	CAPEM []byte
	// Fetches counts certificate requests answered (any status).
	Fetches atomic.Int32
	// Down makes every request fail with 503 while set.
	Down atomic.Bool

	key   *rsa.PrivateKey
	certs map[string][]byte
}

// NewServer starts the fake over TLS (Options gives the adapter a client
// that trusts it); it is closed when t ends.
func NewServer(t testing.TB) *Server { return newServer(t, true) }

// NewPlainServer starts the fake over plain http on the loopback address,
// which the adapter accepts for a loopback host only: for a webhookd
// process whose client trusts the system roots alone.
func NewPlainServer(t testing.TB) *Server { return newServer(t, false) }

func newServer(t testing.TB, useTLS bool) *Server {
	t.Helper()
	now := time.Now()
	rootKey := ecKey(t)
	interKey := ecKey(t)
	leafKey, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)

	root := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "webhookd test root"}, IsCA: true,
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour)}, nil, &rootKey.PublicKey, rootKey)
	inter := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "webhookd test intermediate"}, IsCA: true,
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(5 * 365 * 24 * time.Hour)}, root, &interKey.PublicKey, rootKey)
	other := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "webhookd untrusted root"}, IsCA: true,
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour)}, nil, &rootKey.PublicKey, rootKey)
	const name = "messageverificationcerts.sandbox.paypal.com"
	leaf := func(cn string, from, to time.Time, parent *x509.Certificate) *x509.Certificate {
		return issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: []string{"PayPal, Inc."}}, DNSNames: []string{cn},
			NotBefore: from, NotAfter: to, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, parent, &leafKey.PublicKey, interKeyOr(parent, other, interKey, rootKey))
	}
	s := &Server{Roots: x509.NewCertPool(), CAPEM: pemOf(root), key: leafKey, certs: map[string][]byte{}}
	s.Roots.AddCert(root)
	s.certs[Good] = append(pemOf(leaf(name, now.Add(-time.Hour), now.Add(365*24*time.Hour), inter)), pemOf(inter)...)
	s.certs[Alias] = s.certs[Good]
	s.certs[Expired] = append(pemOf(leaf(name, now.Add(-48*time.Hour), now.Add(-time.Hour), inter)), pemOf(inter)...)
	s.certs[Foreign] = append(pemOf(leaf("evil.example.com", now.Add(-time.Hour), now.Add(365*24*time.Hour), inter)), pemOf(inter)...)
	s.certs[Untrusted] = append(pemOf(leaf(name, now.Add(-time.Hour), now.Add(365*24*time.Hour), other)), pemOf(other)...)
	s.certs[Oversize] = []byte(strings.Repeat("#", paypal.MaxCertBytes+1))

	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Fetches.Add(1)
		if s.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/v1/notifications/certs/")
		pem, ok := s.certs[name]
		if strings.HasPrefix(name, CopyPrefix) {
			pem, ok = s.certs[Good], true
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(pem)
	}))
	if useTLS {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// interKeyOr picks the key that signs a leaf issued by parent.
func interKeyOr(parent, other *x509.Certificate, interKey, rootKey *ecdsa.PrivateKey) crypto.Signer {
	if parent == other {
		return rootKey
	}
	return interKey
}

// Host is the server's host:port, for WithCertHosts.
func (s *Server) Host() string {
	u, _ := url.Parse(s.URL)
	return u.Host
}

// Port is the server's port.
func (s *Server) Port() string {
	u, _ := url.Parse(s.URL)
	return u.Port()
}

// CertURL is the URL of the certificate named name (Good, Expired, ...).
func (s *Server) CertURL(name string) string {
	return s.URL + "/v1/notifications/certs/" + name
}

// Options make an adapter trust this fake only: its host, its CA, and a
// client that trusts its TLS certificate.
func (s *Server) Options() []paypal.Option {
	return []paypal.Option{paypal.WithCertHosts([]string{s.Host()}), paypal.WithRoots(s.Roots), paypal.WithClient(s.Client())}
}

// Sign returns the transmission headers PayPal would send with body for
// webhookID, signed with the key of the certificates above and naming the
// certificate cert as PAYPAL-CERT-URL.
func (s *Server) Sign(cert, webhookID, transmissionID string, at time.Time, body []byte) http.Header {
	ts := at.UTC().Format(time.RFC3339)
	crc := strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
	digest := sha256.Sum256([]byte(paypal.SignedString(transmissionID, ts, webhookID, crc)))
	sig, err := rsa.SignPKCS1v15(nil, s.key, crypto.SHA256, digest[:])
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	h.Set(paypal.HeaderTransmissionID, transmissionID)
	h.Set(paypal.HeaderTransmissionTime, ts)
	h.Set(paypal.HeaderTransmissionSig, base64.StdEncoding.EncodeToString(sig))
	h.Set(paypal.HeaderCertURL, s.CertURL(cert))
	h.Set(paypal.HeaderAuthAlgo, paypal.AuthAlgo)
	return h
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	return k
}

var serial atomic.Int64

// issue signs tmpl with signer as parent (self-signed when parent is nil).
func issue(t testing.TB, tmpl, parent *x509.Certificate, pub any, signer crypto.Signer) *x509.Certificate {
	t.Helper()
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	if tmpl.IsCA {
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	must(t, err)
	c, err := x509.ParseCertificate(der)
	must(t, err)
	return c
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
