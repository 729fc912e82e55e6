package paypal

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Verify's errors. All but ErrCertUnavailable wrap
// providers.ErrUnauthorized (401); none quotes a header, a signature or the
// body.
var (
	// ErrNotSigned means a transmission header is missing or empty.
	ErrNotSigned = fmt.Errorf("%w: paypal: a PAYPAL-TRANSMISSION-* header is missing", providers.ErrSignatureMissing)
	// ErrInvalidHeader means a transmission header is sent twice, the
	// signature is not base64, or the id or time holds a "|".
	ErrInvalidHeader = fmt.Errorf("%w: paypal: invalid PAYPAL-TRANSMISSION-* header", providers.ErrSignatureInvalid)
	// ErrUnsupportedAlgo means PAYPAL-AUTH-ALGO is not SHA256withRSA.
	ErrUnsupportedAlgo = fmt.Errorf("%w: paypal: PAYPAL-AUTH-ALGO is not %s", providers.ErrSignatureInvalid, AuthAlgo)
	// ErrCertURL means PAYPAL-CERT-URL is not https (or http to a loopback
	// host) on an allowed host and port, naming one certificate under
	// CertPathPrefix without a query or fragment. Nothing is fetched.
	ErrCertURL = fmt.Errorf("%w: paypal: PAYPAL-CERT-URL is not on an allowed host", providers.ErrCertificateInvalid)
	// ErrCertRefused means the certificate URL answered a redirect or a
	// client error (404...): there is no certificate there.
	ErrCertRefused = fmt.Errorf("%w: paypal: no certificate at PAYPAL-CERT-URL", providers.ErrCertificateInvalid)
	// ErrBadCert means the answer holds no PEM certificate, or the leaf's
	// key is not RSA.
	ErrBadCert = fmt.Errorf("%w: paypal: PAYPAL-CERT-URL holds no RSA certificate", providers.ErrCertificateInvalid)
	// ErrUntrustedCert means the certificate does not chain to the roots
	// (the system's or WEBHOOKD_PAYPAL_CA_FILE's).
	ErrUntrustedCert = fmt.Errorf("%w: paypal: certificate does not chain to the trusted roots", providers.ErrCertificateInvalid)
	// ErrCertExpired means the certificate is not valid now.
	ErrCertExpired = fmt.Errorf("%w: paypal: certificate expired or not yet valid", providers.ErrCertificateInvalid)
	// ErrForeignCert means the certificate is not PayPal's
	// message-verification certificate.
	ErrForeignCert = fmt.Errorf("%w: paypal: certificate is not PayPal's message-verification certificate", providers.ErrCertificateInvalid)
	// ErrNoValidSignature means the signature does not match for any
	// configured webhook id.
	ErrNoValidSignature = fmt.Errorf("%w: paypal: signature does not match", providers.ErrSignatureInvalid)
	// ErrTransmissionTime means PAYPAL-TRANSMISSION-TIME is not an RFC 3339
	// time within the tolerance of now: a signature captured longer ago
	// is not accepted.
	ErrTransmissionTime = fmt.Errorf("%w: paypal: PAYPAL-TRANSMISSION-TIME is outside the tolerance", providers.ErrTimestamp)
	// ErrTransmissionReused means PAYPAL-TRANSMISSION-ID was verified
	// before with another body. PayPal signs the body only through its
	// CRC-32, which anyone can match with a few chosen bytes, so a second
	// body under one signed transmission is a forgery.
	ErrTransmissionReused = fmt.Errorf("%w: paypal: transmission already received with another body", providers.ErrSignatureInvalid)
	// ErrCertUnavailable means the certificate could not be fetched: no
	// connection, a timeout, a 5xx or 429 answer, or one larger than
	// MaxCertBytes; or it is not fetched now, its URL's fetch having
	// failed less than FailedFetchPause ago (whatever the failure), or
	// MaxFailedURLs others having. It wraps providers.ErrUnavailable (503 with
	// Retry-After): PayPal retries, and a genuine event is not refused
	// because PayPal's API was slow.
	ErrCertUnavailable = fmt.Errorf("%w: paypal: signing certificate unavailable", providers.ErrUnavailable)
)

// transmission is a delivery's transmission headers.
type transmission struct {
	id, time, certURL string
	sig               []byte
}

// Verify authenticates a delivery (see the package comment for the
// checks), fetching the signing certificate at most once per URL while it
// is cached. ctx bounds the fetch, as does the fetch timeout.
func (a *Adapter) Verify(ctx context.Context, d providers.Delivery) error {
	header, body := d.Header, d.Body
	tr, err := readHeaders(header)
	if err != nil {
		return err
	}
	if len(a.webhookIDs) == 0 {
		return ErrNoValidSignature
	}
	// Checked before the certificate is fetched: an old capture costs no
	// network call.
	sent, err := time.Parse(time.RFC3339Nano, tr.time)
	if err != nil {
		return fmt.Errorf("%w (not an RFC 3339 time)", ErrTransmissionTime)
	}
	now := a.now()
	if d := now.Sub(sent); d > a.tolerance || d < -a.tolerance {
		return ErrTransmissionTime
	}
	u, key, err := a.checkCertURL(tr.certURL)
	if err != nil {
		return err
	}
	leaf, err := a.certificate(ctx, u, key)
	if err != nil {
		return err
	}
	pub := leaf.PublicKey.(*rsa.PublicKey) // checked when fetched
	crc := strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
	for _, id := range a.webhookIDs {
		digest := sha256.Sum256([]byte(SignedString(tr.id, tr.time, id, crc)))
		if rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], tr.sig) == nil {
			// Only a verified transmission is remembered, so nobody
			// without a PayPal signature can fill or flush the memory.
			if !a.seen.bind(tr.id, body, now, sent.Add(a.tolerance)) {
				return ErrTransmissionReused
			}
			a.cache.verified(key, now)
			return nil
		}
	}
	return ErrNoValidSignature
}

// SignedString is what PayPal signs for a transmission: its id and time,
// the receiving webhook's id and the CRC-32 of the body as an unsigned
// decimal, joined by "|".
func SignedString(transmissionID, transmissionTime, webhookID, crc32Decimal string) string {
	return transmissionID + "|" + transmissionTime + "|" + webhookID + "|" + crc32Decimal
}

// readHeaders reads the five transmission headers, each exactly once.
func readHeaders(header http.Header) (transmission, error) {
	var vals [5]string
	for i, name := range []string{HeaderTransmissionID, HeaderTransmissionTime, HeaderTransmissionSig, HeaderCertURL, HeaderAuthAlgo} {
		v := header.Values(name)
		switch {
		case len(v) == 0 || len(v) == 1 && v[0] == "":
			return transmission{}, ErrNotSigned
		case len(v) > 1:
			return transmission{}, fmt.Errorf("%w (%s sent %d times)", ErrInvalidHeader, name, len(v))
		}
		vals[i] = v[0]
	}
	tr := transmission{id: vals[0], time: vals[1], certURL: vals[3]}
	if vals[4] != AuthAlgo {
		return transmission{}, ErrUnsupportedAlgo
	}
	if strings.Contains(tr.id, "|") || strings.Contains(tr.time, "|") {
		return transmission{}, fmt.Errorf("%w (| in the transmission id or time)", ErrInvalidHeader)
	}
	sig, err := base64.StdEncoding.DecodeString(vals[2])
	if err != nil || len(sig) == 0 {
		return transmission{}, fmt.Errorf("%w (signature is not base64)", ErrInvalidHeader)
	}
	tr.sig = sig
	return tr, nil
}
