package paypal_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
)

// unsigned is a delivery naming certURL whose signature PayPal never made.
func unsigned(srv *paypaltest.Server, certURL string, body []byte) http.Header {
	h := srv.Sign(paypaltest.Good, webhookID, "tx-unsigned", time.Now(), body)
	h.Set(paypal.HeaderTransmissionSig, "AAAA")
	h.Set(paypal.HeaderCertURL, certURL)
	return h
}

// TestCertURLRefusedWithoutFetch: only https://<allowed host>/v1/
// notifications/certs/<name>, without query, fragment or encoding, is
// fetched; anything else is 401 and nothing leaves the process.
func TestCertURLRefusedWithoutFetch(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv)
	body := readFixture(t, "payment_capture_completed.json")
	good := srv.CertURL(paypaltest.Good)
	for _, u := range []string{
		good + "?v=1", good + "?", good + "#f", good + "?#",
		srv.URL + "/v1/notifications/certs/",
		srv.URL + "/v1/notifications/certs/.",
		srv.URL + "/v1/notifications/certs/..",
		srv.URL + "/v1/notifications/certs/../certs/" + paypaltest.Good,
		srv.URL + "/v1/notifications/certs/a/" + paypaltest.Good,
		srv.URL + "/v1/notifications/certs/CERT%2Dgood",
		srv.URL + "/v1/notifications/certs/CERT-good%00",
		srv.URL + "/v1/notifications/webhooks-events/WH-1",
		srv.URL + "/v1/oauth2/token",
		srv.URL + "//v1/notifications/certs/" + paypaltest.Good,
		srv.URL + "/V1/notifications/certs/" + paypaltest.Good,
		srv.URL,
		srv.URL + "/v1/notifications/certs/CERT%41",
	} {
		t.Run(u, func(t *testing.T) {
			err := a.Verify(context.Background(), providers.Delivery{Header: unsigned(srv, u, body), Body: body})
			require.ErrorIs(t, err, paypal.ErrCertURL)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
		})
	}
	require.Zero(t, srv.Fetches.Load())
}

// TestCertURLSpellings: the spellings of one certificate's URL share one
// cache entry, so they cost one fetch.
func TestCertURLSpellings(t *testing.T) {
	srv := paypaltest.NewPlainServer(t)
	body := readFixture(t, "payment_capture_completed.json")
	a, err := paypal.New([]string{webhookID}, paypal.WithCertHosts([]string{"localhost:" + srv.Port()}), paypal.WithRoots(srv.Roots))
	require.NoError(t, err)
	for i, host := range []string{"localhost", "LOCALHOST", "LocalHost"} {
		h := srv.Sign(paypaltest.Good, webhookID, fmt.Sprintf("tx-%d", i), time.Now(), body)
		h.Set(paypal.HeaderCertURL, "http://"+host+":"+srv.Port()+paypal.CertPathPrefix+paypaltest.Good)
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
	}
	require.EqualValues(t, 1, srv.Fetches.Load())
}

// TestUnsignedQueriesFetchNothing is the attack: 20 unsigned
// requests whose PAYPAL-CERT-URL differs only in its query string.
func TestUnsignedQueriesFetchNothing(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv)
	body := readFixture(t, "payment_capture_completed.json")
	for i := range 20 {
		err := a.Verify(context.Background(), providers.Delivery{Header: unsigned(srv, fmt.Sprintf("%s?n=%d", srv.CertURL(paypaltest.Good), i), body), Body: body})
		require.ErrorIs(t, err, paypal.ErrCertURL)
	}
	require.Zero(t, srv.Fetches.Load(), "20 requests, no fetch")
}

// TestCheapChecksFirst: a transmission outside the time window, or an
// adapter without a webhook id, costs no fetch, whatever the URL.
func TestCheapChecksFirst(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv)
	body := readFixture(t, "payment_capture_completed.json")
	old := srv.Sign(paypaltest.Alias, webhookID, "tx-old", time.Now().Add(-paypal.DefaultTolerance-time.Minute), body)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: old, Body: body}), paypal.ErrTransmissionTime)
	require.ErrorIs(t, (&paypal.Adapter{}).Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Alias, webhookID, "tx-1", time.Now(), body), Body: body}), providers.ErrUnauthorized)
	require.Zero(t, srv.Fetches.Load())
}

// TestFailedFetchPaused: a URL whose fetch failed is fetched once, however
// many deliveries name it in the next 30 seconds, one after another or at
// once; each answers 503, which PayPal retries.
func TestFailedFetchPaused(t *testing.T) {
	body := readFixture(t, "payment_capture_completed.json")
	for _, tc := range []struct {
		name  string
		cert  string
		setup func(*paypaltest.Server)
	}{
		{"PayPal down", paypaltest.Good, func(s *paypaltest.Server) { s.Down.Store(true) }},
		{"no certificate there", paypaltest.Missing, func(*paypaltest.Server) {}},
	} {
		t.Run(tc.name+", one after another", func(t *testing.T) {
			srv := paypaltest.NewServer(t)
			tc.setup(srv)
			now := time.Now()
			clock := now
			a := newAdapter(t, srv, paypal.WithClock(func() time.Time { return clock }))
			h := unsigned(srv, srv.CertURL(tc.cert), body)
			require.Error(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
			for i := range 19 {
				clock = now.Add(time.Duration(i) * time.Second)
				err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
				require.ErrorIs(t, err, paypal.ErrCertUnavailable)
				require.ErrorIs(t, err, providers.ErrUnavailable, "503 with Retry-After")
			}
			require.EqualValues(t, 1, srv.Fetches.Load(), "20 deliveries in 30s, one fetch")
		})
		t.Run(tc.name+", at once", func(t *testing.T) {
			srv := paypaltest.NewServer(t)
			tc.setup(srv)
			a := newAdapter(t, srv)
			h := unsigned(srv, srv.CertURL(tc.cert), body)
			var wg sync.WaitGroup
			for range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					require.Error(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
				}()
			}
			wg.Wait()
			require.EqualValues(t, 1, srv.Fetches.Load(), "20 concurrent deliveries, one fetch")
		})
	}
}

// TestConcurrentGoodFetchOnce: 20 genuine deliveries at once naming a
// certificate not yet cached cause one fetch.
func TestConcurrentGoodFetchOnce(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv)
	body := readFixture(t, "payment_capture_completed.json")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := srv.Sign(paypaltest.Good, webhookID, fmt.Sprintf("tx-%d", i), time.Now(), body)
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, srv.Fetches.Load())
}

// TestFloodKeepsGenuineCert: after the genuine certificate verified a
// delivery, a flood of unsigned deliveries naming other URLs (each serving
// a genuine PayPal certificate, which is kept, or nothing, which is
// remembered as failed) never pushes it out: the next genuine delivery is
// verified without a fetch. Failing URLs stop being fetched once
// MaxFailedURLs of them failed within 30 seconds.
func TestFloodKeepsGenuineCert(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv)
	body := readFixture(t, "payment_capture_completed.json")
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body), Body: body}))
	require.EqualValues(t, 1, srv.Fetches.Load())

	for i := range 4 * paypal.DefaultCacheSize {
		err := a.Verify(context.Background(), providers.Delivery{Header: unsigned(srv, srv.CertURL(fmt.Sprintf("%s%d", paypaltest.CopyPrefix, i)), body), Body: body})
		require.ErrorIs(t, err, paypal.ErrNoValidSignature)
	}
	require.EqualValues(t, 1+4*paypal.DefaultCacheSize, srv.Fetches.Load())
	for i := range 2 * paypal.MaxFailedURLs {
		require.Error(t, a.Verify(context.Background(), providers.Delivery{Header: unsigned(srv, srv.CertURL(fmt.Sprintf("CERT-none-%d", i)), body), Body: body}))
	}
	require.EqualValues(t, 1+4*paypal.DefaultCacheSize+paypal.MaxFailedURLs, srv.Fetches.Load(), "failing URLs are capped")

	before := srv.Fetches.Load()
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-2", time.Now(), body), Body: body}))
	require.Equal(t, before, srv.Fetches.Load(), "the genuine certificate is still cached")
}
