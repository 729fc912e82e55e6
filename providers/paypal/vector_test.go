package paypal_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/providertest"
)

// The offline verification vector of PayPal's Java SDK
// (paypal/PayPal-Java-SDK, rest-api-sdk/src/test/java/com/paypal/base/
// ValidateCertTest.java, with the certificate the test serves for the cert
// URL, rest-api-sdk/src/test/resources/testClientCert.crt): testdata holds
// the body and that certificate as published.
const (
	vecWebhookID = "96605875FF6516633"
	vecID        = "071f7d20-1584-11e7-abf0-6b62a8a99ac4"
	vecTime      = "2017-03-30T20:04:05Z"
	vecCRC       = "3494065244"
	vecSig       = "aBjgm5/xljRYu3G64Q0axISrP2xcy7WbW1u4UTCKnQvyprOZ1a1BBmqn2Jdr6ce8E76I3Ti/AL9y4VYSHyGSEaoE6dVQcCDebLbOXLH0fjTAbTc1/rmfdWmsk0DPltW84Y8W8jOHe3CLWDOwg5zmozyt+AceG2x5eOiw7mLSycaEoj/5RG+dOIWXnmWcLEArbG3VFshy0wuhZrKuGa9C/bD4Ku+Y9gK7Bv5I5IuGRVnTGpcFnVG0KxOyJxccLGyBVCIUMY5IZS7LkmJszQ3HZZFDTNihvgJHECSLwLhzUaysIye5G6CbbLdtAmeeb6wiDciEAvr2dFf+SplOR4Lrng=="
)

// sdkVector serves the SDK's certificate over loopback http, trusted as
// its own root (its DigiCert chain is not part of the vector), and returns
// the SDK's delivery, the options that trust that server, and at, which
// builds an adapter with them reading the clock at now.
func sdkVector(t *testing.T) (d providers.Delivery, at func(now time.Time, ids ...string) *paypal.Adapter, opts []paypal.Option) {
	t.Helper()
	body, err := os.ReadFile("testdata/sdk_vector_body.json")
	require.NoError(t, err)
	certPEM, err := os.ReadFile("testdata/sdk_client_cert.pem")
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.Equal(t, "messageverificationcerts.sandbox.paypal.com", cert.Subject.CommonName)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(certPEM) }))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	opts = []paypal.Option{paypal.WithCertHosts([]string{u.Host}), paypal.WithRoots(roots)}
	at = func(now time.Time, ids ...string) *paypal.Adapter {
		a, err := paypal.New(ids, append(opts, paypal.WithClock(func() time.Time { return now }))...)
		require.NoError(t, err)
		return a
	}
	h := http.Header{}
	h.Set(paypal.HeaderTransmissionID, vecID)
	h.Set(paypal.HeaderTransmissionTime, vecTime)
	h.Set(paypal.HeaderTransmissionSig, vecSig)
	h.Set(paypal.HeaderCertURL, srv.URL+"/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77")
	h.Set(paypal.HeaderAuthAlgo, paypal.AuthAlgo)
	return providers.Delivery{Header: h, Body: body}, at, opts
}

// vecAt is a minute after the SDK vector's transmission time, inside its
// certificate's validity (2017-02-18 to 2019-04-26).
var vecAt = time.Date(2017, 3, 30, 20, 5, 5, 0, time.UTC)

// sdkExample is the SDK vector as the conformance kit's published example.
func sdkExample(t *testing.T) providertest.Example {
	d, _, opts := sdkVector(t)
	return providertest.Example{
		Source: "https://github.com/paypal/PayPal-Java-SDK/blob/master/rest-api-sdk/src/test/java/com/paypal/base/ValidateCertTest.java",
		Secret: vecWebhookID,
		New: func(ids []string, now func() time.Time) (providers.Provider, error) {
			return paypal.New(ids, append(opts, paypal.WithClock(now))...)
		},
		Now:      vecAt,
		Delivery: d,
		Keys:     []string{"WH-2MW4820926242972J-6SG447389E205703U"},
	}
}

// TestSDKVector verifies the SDK's delivery through the whole adapter, a
// minute after its transmission time.
func TestSDKVector(t *testing.T) {
	d, newAt, opts := sdkVector(t)
	body, h := d.Body, d.Header
	require.Len(t, body, 1636)
	require.Equal(t, vecCRC, strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10), "CRC-32 IEEE, unsigned decimal")
	require.Equal(t, vecID+"|"+vecTime+"|"+vecWebhookID+"|"+vecCRC, paypal.SignedString(vecID, vecTime, vecWebhookID, vecCRC))
	at := vecAt

	require.NoError(t, newAt(at, "WH-OTHER", vecWebhookID).Verify(context.Background(), providers.Delivery{Header: h, Body: body}), "PayPal's signature verifies")

	tampered := append([]byte(nil), body...)
	tampered[100] ^= 1
	require.ErrorIs(t, newAt(at, vecWebhookID).Verify(context.Background(), providers.Delivery{Header: h, Body: tampered}), paypal.ErrNoValidSignature, "a changed body byte")
	require.ErrorIs(t, newAt(at, "96605875FF6516634").Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrNoValidSignature, "another webhook id")
	require.ErrorIs(t, newAt(time.Now(), vecWebhookID).Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrTransmissionTime, "the transmission is years old")
	old, err := paypal.New([]string{vecWebhookID}, append(opts, paypal.WithTolerance(100*365*24*time.Hour))...)
	require.NoError(t, err)
	require.ErrorIs(t, old.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrCertExpired, "the certificate expired in 2019")

	// The event of the vector.
	ev, err := providertest.OneEvent(newAt(at, vecWebhookID).Parse(providers.Delivery{Body: body}))
	require.NoError(t, err)
	require.Equal(t, "WH-2MW4820926242972J-6SG447389E205703U", ev.Key)
	require.Equal(t, "BILLING.PLAN.CREATED", ev.Type)
}

// TestSDKVectorCRCForgery is the attack on PayPal's scheme, built on the
// SDK's genuine delivery: PayPal signs the body only through its CRC-32, so
// a body saying another event (another id, so dedupe does not stop it, and
// PAYMENT.CAPTURE.COMPLETED) with 8 chosen bytes in its summary has the
// same checksum, and the genuine headers verify it. The adapter refuses it
// once it has seen the genuine body under that transmission id, and
// refuses both once the transmission time is out of the window.
func TestSDKVectorCRCForgery(t *testing.T) {
	body, err := os.ReadFile("testdata/sdk_vector_body.json")
	require.NoError(t, err)
	forged := forgeEvent(t, body, `"summary":"`,
		"WH-2MW4820926242972J-6SG447389E205703U", "WH-9FRG0000000000000-0000000000000000X",
		"BILLING.PLAN.CREATED", "PAYMENT.CAPTURE.COMPLETED")
	require.Equal(t, crc32.ChecksumIEEE(body), crc32.ChecksumIEEE(forged))

	d, at, _ := sdkVector(t)
	h := d.Header
	sent := time.Date(2017, 3, 30, 20, 4, 5, 0, time.UTC)
	newAt := func(now time.Time) *paypal.Adapter { return at(now, vecWebhookID) }

	// The forgery is a different, well-formed event...
	a := newAt(sent.Add(time.Minute))
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: forged}))
	require.NoError(t, err)
	require.Equal(t, "WH-9FRG0000000000000-0000000000000000X", ev.Key)
	require.Equal(t, "PAYMENT.CAPTURE.COMPLETED", ev.Type)
	// ...that PayPal's signature verifies on an adapter that has not seen
	// the genuine transmission: the scheme's weakness, which the adapter
	// cannot close alone (WithConfirmation does).
	require.NoError(t, newAt(sent.Add(time.Minute)).Verify(context.Background(), providers.Delivery{Header: h, Body: forged}), "CRC-32 is all that binds the body")

	// Seen the genuine body first: the forged one is refused, the genuine
	// one (a retry of the same transmission) still verifies.
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: forged}), paypal.ErrTransmissionReused)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))

	// Out of the window, neither verifies, on any node.
	late := newAt(sent.Add(paypal.DefaultTolerance + time.Second))
	require.ErrorIs(t, late.Verify(context.Background(), providers.Delivery{Header: h, Body: forged}), paypal.ErrTransmissionTime)
	require.ErrorIs(t, late.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrTransmissionTime)
	require.NoError(t, newAt(sent.Add(paypal.DefaultTolerance)).Verify(context.Background(), providers.Delivery{Header: h, Body: forged}), "the window's edge")
}
