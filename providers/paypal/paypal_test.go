package paypal_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	fixturefile "github.com/webhookd/webhookd/providers/fixture"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
	"github.com/webhookd/webhookd/providers/providertest"
)

const (
	fixtures  = "../../fixtures/paypal"
	webhookID = "5GP028458E2496506"
	otherID   = "8PT597110X687430L"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

func fixtureNames(t testing.TB) []string {
	t.Helper()
	loaded, err := fixturefile.Load([]string{fixtures}, "")
	require.NoError(t, err)
	var names []string
	for _, f := range loaded {
		names = append(names, filepath.Base(f.Path))
	}
	return names
}

// signing is the adapter under test plus PayPal's side of the fake: the
// conformance kit signs with it as PayPal would.
type signing struct {
	*paypal.Adapter
	srv       *paypaltest.Server
	webhookID string
	now       func() time.Time
	n         *atomic.Int64
}

func (s signing) Sign(body []byte) (providers.Delivery, error) {
	// Unique per signature: a transmission id is bound to one body.
	id := "tx-" + strconv.FormatInt(s.n.Add(1), 10)
	return providers.Delivery{Header: s.srv.Sign(paypaltest.Good, s.webhookID, id, s.now(), body), Body: body}, nil
}

// failing is a network that is down.
type failing struct{}

func (failing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connect: connection refused")
}

func TestConformance(t *testing.T) {
	srv := paypaltest.NewServer(t)
	var n atomic.Int64
	providertest.Run(t, providertest.Kit{
		New: func(ids []string, now func() time.Time) (providers.Provider, error) {
			a, err := paypal.New(ids, append(srv.Options(), paypal.WithClock(now))...)
			return signing{Adapter: a, srv: srv, webhookID: ids[0], now: now, n: &n}, err
		},
		Unreachable: func(ids []string, now func() time.Time) (providers.Provider, error) {
			return paypal.New(ids, append(srv.Options(), paypal.WithClock(now), paypal.WithClient(&http.Client{Transport: failing{}}))...)
		},
		Secrets:   [2]string{webhookID, otherID},
		Tolerance: paypal.DefaultTolerance,
		Fixtures:  fixtures,
		// A retry or a resend is a new transmission of the same event;
		// members in another order or one PayPal added since must not
		// make it a different payload.
		Retry:    providertest.Chain(providertest.Reordered, providertest.WithMember("added_later", `{"note":"a member PayPal added since"}`)),
		Change:   providertest.ChangeAmount("value"),
		Examples: []providertest.Example{sdkExample(t)},
	})
}

func newAdapter(t *testing.T, srv *paypaltest.Server, opts ...paypal.Option) *paypal.Adapter {
	t.Helper()
	a, err := paypal.New([]string{otherID, webhookID}, append(srv.Options(), opts...)...)
	require.NoError(t, err)
	return a
}

func TestVerifyRefuses(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv)
	body := readFixture(t, "payment_capture_completed.json")
	now := time.Now()
	good := func() http.Header { return srv.Sign(paypaltest.Good, webhookID, "tx-1", now, body) }
	with := func(name, value string) http.Header {
		h := good()
		h.Set(name, value)
		return h
	}
	without := func(name string) http.Header {
		h := good()
		h.Del(name)
		return h
	}
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: good(), Body: body}), "any configured webhook id")

	tests := []struct {
		name   string
		header http.Header
		body   []byte
		want   error
	}{
		{"body changed", good(), []byte(strings.Replace(string(body), "125.00", "925.00", 1)), paypal.ErrNoValidSignature},
		{"signed for another webhook", srv.Sign(paypaltest.Good, "WH-SOMEONE-ELSE", "tx-1", now, body), nil, paypal.ErrNoValidSignature},
		{"transmission id changed", with(paypal.HeaderTransmissionID, "tx-2"), nil, paypal.ErrNoValidSignature},
		{"transmission time changed", with(paypal.HeaderTransmissionTime, now.Add(time.Second).UTC().Format(time.RFC3339)), nil, paypal.ErrNoValidSignature},
		{"| in the transmission id", with(paypal.HeaderTransmissionID, "tx|1"), nil, paypal.ErrInvalidHeader},
		{"signature not base64", with(paypal.HeaderTransmissionSig, "not base64!"), nil, paypal.ErrInvalidHeader},
		{"signature of another key", with(paypal.HeaderTransmissionSig, "AAAA"), nil, paypal.ErrNoValidSignature},
		{"other algorithm", with(paypal.HeaderAuthAlgo, "SHA1withRSA"), nil, paypal.ErrUnsupportedAlgo},
		{"header twice", func() http.Header { h := good(); h.Add(paypal.HeaderTransmissionSig, "AAAA"); return h }(), nil, paypal.ErrInvalidHeader},
		{"no signature", without(paypal.HeaderTransmissionSig), nil, paypal.ErrNotSigned},
		{"no cert url", without(paypal.HeaderCertURL), nil, paypal.ErrNotSigned},
		{"no algorithm", without(paypal.HeaderAuthAlgo), nil, paypal.ErrNotSigned},
		{"no transmission id", without(paypal.HeaderTransmissionID), nil, paypal.ErrNotSigned},
		{"no transmission time", without(paypal.HeaderTransmissionTime), nil, paypal.ErrNotSigned},
		{"cert host not allowed", with(paypal.HeaderCertURL, "https://api.paypal.com.evil.example/v1/notifications/certs/"+paypaltest.Good), nil, paypal.ErrCertURL},
		{"cert on another port", with(paypal.HeaderCertURL, "https://127.0.0.1:1/v1/notifications/certs/"+paypaltest.Good), nil, paypal.ErrCertURL},
		{"cert url with user info", with(paypal.HeaderCertURL, strings.Replace(srv.CertURL(paypaltest.Good), "https://", "https://u:p@", 1)), nil, paypal.ErrCertURL},
		{"cert url not http", with(paypal.HeaderCertURL, "file:///etc/ssl/cert.pem"), nil, paypal.ErrCertURL},
		{"no certificate there", srv.Sign(paypaltest.Missing, webhookID, "tx-1", now, body), nil, paypal.ErrCertRefused},
		{"foreign certificate", srv.Sign(paypaltest.Foreign, webhookID, "tx-1", now, body), nil, paypal.ErrForeignCert},
		{"certificate of another CA", srv.Sign(paypaltest.Untrusted, webhookID, "tx-1", now, body), nil, paypal.ErrUntrustedCert},
		{"expired certificate", srv.Sign(paypaltest.Expired, webhookID, "tx-1", now, body), nil, paypal.ErrCertExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.body
			if b == nil {
				b = body
			}
			err := a.Verify(context.Background(), providers.Delivery{Header: tt.header, Body: b})
			require.ErrorIs(t, err, providers.ErrUnauthorized, "401, never 503")
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
			}
			if sig := tt.header.Get(paypal.HeaderTransmissionSig); sig != "" {
				require.NotContains(t, err.Error(), sig)
			}
		})
	}
	t.Run("zero adapter rejects", func(t *testing.T) {
		require.ErrorIs(t, (&paypal.Adapter{}).Verify(context.Background(), providers.Delivery{Header: good(), Body: body}), providers.ErrUnauthorized)
	})
}

func TestCertFetchFailuresAreUnavailable(t *testing.T) {
	body := readFixture(t, "payment_capture_refunded.json")
	now := time.Now()
	tests := []struct {
		name  string
		setup func(t *testing.T, srv *paypaltest.Server) (http.Header, []paypal.Option)
	}{
		{"server answers 503", func(t *testing.T, srv *paypaltest.Server) (http.Header, []paypal.Option) {
			srv.Down.Store(true)
			return srv.Sign(paypaltest.Good, webhookID, "tx-1", now, body), nil
		}},
		{"answer too large", func(t *testing.T, srv *paypaltest.Server) (http.Header, []paypal.Option) {
			return srv.Sign(paypaltest.Oversize, webhookID, "tx-1", now, body), nil
		}},
		{"connection refused", func(t *testing.T, srv *paypaltest.Server) (http.Header, []paypal.Option) {
			h := srv.Sign(paypaltest.Good, webhookID, "tx-1", now, body)
			srv.Close()
			return h, nil
		}},
		{"timeout", func(t *testing.T, srv *paypaltest.Server) (http.Header, []paypal.Option) {
			slow := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done()
				return nil, r.Context().Err()
			})}
			return srv.Sign(paypaltest.Good, webhookID, "tx-1", now, body), []paypal.Option{paypal.WithClient(slow), paypal.WithFetchTimeout(50 * time.Millisecond)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := paypaltest.NewServer(t)
			h, opts := tt.setup(t, srv)
			a := newAdapter(t, srv, opts...)
			err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
			require.ErrorIs(t, err, paypal.ErrCertUnavailable)
			require.ErrorIs(t, err, providers.ErrUnavailable, "503 with Retry-After")
			require.NotErrorIs(t, err, providers.ErrUnauthorized, "never 401")
		})
	}
	t.Run("the caller's context ends the wait", func(t *testing.T) {
		srv := paypaltest.NewServer(t)
		a := newAdapter(t, srv)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := a.Verify(ctx, providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-1", now, body), Body: body})
		require.ErrorIs(t, err, providers.ErrUnavailable)
	})
	t.Run("a failure is not fetched again for 30s", func(t *testing.T) {
		srv := paypaltest.NewServer(t)
		clock := now
		a := newAdapter(t, srv, paypal.WithClock(func() time.Time { return clock }))
		h := srv.Sign(paypaltest.Good, webhookID, "tx-1", now, body)
		srv.Down.Store(true)
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), providers.ErrUnavailable)
		srv.Down.Store(false)
		clock = now.Add(paypal.FailedFetchPause - time.Second)
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), providers.ErrUnavailable, "PayPal is back, but the URL failed 29s ago")
		require.EqualValues(t, 1, srv.Fetches.Load())
		clock = now.Add(paypal.FailedFetchPause)
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), "fetched again 30s later")
		require.EqualValues(t, 2, srv.Fetches.Load())
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCertificateFetchedOncePerURL(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv)
	names := fixtureNames(t)
	var wg sync.WaitGroup
	errs := make(chan error, 10*len(names))
	for i := range 10 {
		for _, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := readFixture(t, name)
				errs <- a.Verify(context.Background(), providers.Delivery{Header: srv.Sign(paypaltest.Good, webhookID, "tx-"+name+string(rune('a'+i)), time.Now(), body), Body: body})
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, srv.Fetches.Load(), "one fetch for %d concurrent deliveries", 10*len(names))
}

func TestCachedCertificateRecheckedForExpiry(t *testing.T) {
	srv := paypaltest.NewServer(t)
	now := time.Now()
	clock := func() time.Time { return now }
	a := newAdapter(t, srv, paypal.WithClock(func() time.Time { return clock() }))
	body := readFixture(t, "checkout_order_approved.json")
	h := srv.Sign(paypaltest.Good, webhookID, "tx-1", now, body)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
	require.EqualValues(t, 1, srv.Fetches.Load())
	later := now.Add(2 * 365 * 24 * time.Hour)
	clock = func() time.Time { return later }
	h = srv.Sign(paypaltest.Good, webhookID, "tx-2", later, body)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrCertExpired, "a cached certificate past its NotAfter")
}

func TestCertCacheIsBounded(t *testing.T) {
	srv := paypaltest.NewServer(t)
	a := newAdapter(t, srv, paypal.WithCacheSize(1))
	body := readFixture(t, "payment_capture_denied.json")
	good := srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body)
	other := good.Clone()
	other.Set(paypal.HeaderCertURL, srv.CertURL(paypaltest.Alias)) // another URL, the same certificate
	for _, h := range []http.Header{good, other, good, other} {
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
	}
	require.EqualValues(t, 4, srv.Fetches.Load(), "with room for one, two URLs take turns")
}

func TestNoRedirectIsFollowed(t *testing.T) {
	srv := paypaltest.NewServer(t)
	var redirected atomic.Int32
	body := readFixture(t, "payment_capture_completed.json")
	h := srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body)
	client := srv.Client()
	base := client.Transport
	client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/CERT-redirect") {
			redirected.Add(1)
			return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {srv.CertURL(paypaltest.Good)}}, Body: http.NoBody, Request: r}, nil
		}
		return base.RoundTrip(r)
	})
	a := newAdapter(t, srv, paypal.WithClient(client))
	h.Set(paypal.HeaderCertURL, srv.CertURL("CERT-redirect"))
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrCertRefused)
	require.EqualValues(t, 1, redirected.Load())
	require.Zero(t, srv.Fetches.Load(), "the redirect's target is not fetched")
}

func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	srv := paypaltest.NewPlainServer(t)
	body := readFixture(t, "payment_capture_completed.json")
	a, err := paypal.New([]string{webhookID}, paypal.WithCertHosts([]string{srv.Host(), "api.paypal.com"}), paypal.WithRoots(srv.Roots))
	require.NoError(t, err)
	h := srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), "http to 127.0.0.1")
	h.Set(paypal.HeaderCertURL, "http://api.paypal.com/v1/notifications/certs/"+paypaltest.Good)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), paypal.ErrCertURL, "http to a host that is not loopback")
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		ids   []string
		hosts []string
	}{
		{nil, nil},
		{[]string{""}, nil},
		{[]string{" WH1"}, nil},
		{[]string{"WH|1"}, nil},
		{[]string{"WH1"}, []string{"API.paypal.com"}},
		{[]string{"WH1"}, []string{"https://api.paypal.com"}},
		{[]string{"WH1"}, []string{"api.paypal.com:"}},
		{[]string{"WH1"}, []string{"api.paypal.com:x"}},
	} {
		var opts []paypal.Option
		if tt.hosts != nil {
			opts = append(opts, paypal.WithCertHosts(tt.hosts))
		}
		_, err := paypal.New(tt.ids, opts...)
		require.Error(t, err, "%q %q", tt.ids, tt.hosts)
	}
	for _, h := range []string{"api.paypal.com", "127.0.0.1:8443", "[::1]:8443", "::1", "localhost"} {
		require.NoError(t, paypal.CheckCertHost(h), h)
	}
}
