package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdminAddressNeedsATokenOffLoopback: serve refuses a non-loopback admin
// address without a token, with one line naming WEBHOOKD_ADMIN_TOKEN; the
// empty string turns the listener off.
func TestAdminAddressNeedsATokenOffLoopback(t *testing.T) {
	cases := []struct {
		addr, token string
		set         bool
		want        string // "" when valid
		off         bool
	}{
		{set: false},
		{addr: "127.0.0.1:8081", set: true},
		{addr: "localhost:9999", set: true, want: "WEBHOOKD_ADMIN_TOKEN: required"}, // a name may resolve elsewhere
		{addr: "[::1]:8081", set: true},
		{addr: "", set: true, off: true},
		{addr: "0.0.0.0:8081", set: true, want: "WEBHOOKD_ADMIN_TOKEN: required when WEBHOOKD_ADMIN_ADDR (0.0.0.0:8081) is not a loopback address"},
		{addr: ":8081", set: true, want: "WEBHOOKD_ADMIN_TOKEN: required"},
		{addr: "10.0.0.5:8081", set: true, want: "WEBHOOKD_ADMIN_TOKEN: required"},
		{addr: "0.0.0.0:8081", token: "t0ken", set: true},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			env := []string{"WEBHOOKD_DOWNSTREAM_URL=http://core.internal/"}
			if tc.set {
				env = append(env, "WEBHOOKD_ADMIN_ADDR="+tc.addr)
			}
			if tc.token != "" {
				env = append(env, "WEBHOOKD_ADMIN_TOKEN="+tc.token)
			}
			c, err := loadConfigFrom(env)
			require.NoError(t, err)
			if !tc.set {
				require.Equal(t, "127.0.0.1:8081", c.AdminAddr, "the default is loopback")
				require.True(t, c.StoreRequests, "requests are stored by default")
			}
			if tc.off {
				require.Empty(t, c.AdminAddr, "set but empty turns the listener off")
			}
			err = c.checkServe()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	clearEnv(t)
	t.Setenv("WEBHOOKD_DOWNSTREAM_URL", "http://core.internal/")
	t.Setenv("WEBHOOKD_ADMIN_ADDR", "0.0.0.0:0")
	var errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"serve"}, io.Discard, &errb))
	require.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
	require.Contains(t, errb.String(), "WEBHOOKD_ADMIN_TOKEN")
}

// freeAddr returns a loopback address nothing listens on (a moment ago).
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeAdminListenerAndKeysRedrive runs serve with its admin listener:
// the API needs the token, stores the rejected delivery's request, and
// redrives it; `keys redrive`, run beside serve on the same store, redrives
// the others and exits 0 only when every redrive was delivered.
func TestServeAdminListenerAndKeysRedrive(t *testing.T) {
	clearEnv(t)
	var coreStatus atomic.Int32
	coreStatus.Store(http.StatusUnprocessableEntity)
	var forwards atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwards.Add(1)
		w.WriteHeader(int(coreStatus.Load()))
	}))
	defer down.Close()
	adminAddr := freeAddr(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
	t.Setenv("WEBHOOKD_ADMIN_ADDR", adminAddr)
	t.Setenv("WEBHOOKD_ADMIN_TOKEN", "adm1n")
	t.Setenv("WEBHOOKD_DATA_DIR", dataDir)
	t.Setenv("WEBHOOKD_DOWNSTREAM_URL", down.URL)
	t.Setenv("WEBHOOKD_STRIPE_SECRETS", testSecret)
	cfg, err := loadConfig()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	base := "http://" + <-ready
	for _, id := range []string{"evt_a", "evt_b", "evt_c"} {
		body := []byte(`{"id":"` + id + `","object":"event","type":"invoice.paid"}`)
		req, err := http.NewRequest(http.MethodPost, base+"/webhooks/stripe", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", stripeSignature(t, testSecret, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	}

	admin := func(method, path, token string) (int, string) {
		req, err := http.NewRequest(method, "http://"+adminAddr+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := admin("GET", "/healthz", "")
	require.Equal(t, http.StatusOK, code)
	code, _ = admin("GET", "/api/records", "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body := admin("GET", "/metrics", "adm1n")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "webhookd_deliveries_total")
	code, body = admin("GET", "/api/records/stripe:evt_a", "adm1n")
	require.Equal(t, http.StatusOK, code, body)
	var rec struct {
		State   string `json:"state"`
		Request struct {
			Body string `json:"body"`
		} `json:"request"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &rec))
	require.Equal(t, "FAILED", rec.State)
	require.Equal(t, `{"id":"evt_a","object":"event","type":"invoice.paid"}`, rec.Request.Body)

	coreStatus.Store(http.StatusOK)
	code, body = admin("POST", "/api/records/stripe:evt_a/redrive", "adm1n")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"state":"COMPLETED"`)

	// keys redrive, a second process on the same store while serve runs.
	keys := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"keys", "redrive"}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	out, errOut, code := keys("stripe:evt_b")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "stripe:evt_b\tdelivered: 200\n", out)
	out, errOut, code = keys("stripe:evt_a", "stripe:absent")
	require.Equal(t, 1, code, errOut)
	require.Equal(t, "stripe:evt_a\tdelivered: 200\nstripe:absent\tnot redriven: no record\n", out, "a COMPLETED key named is redriven")

	coreStatus.Store(http.StatusServiceUnavailable)
	out, _, code = keys("--state", "failed", "--provider", "stripe", "--since", "1h")
	require.Equal(t, 1, code)
	require.Equal(t, "stripe:evt_c\tnot delivered: the core service answered 503; the record is unchanged\n", out)
	coreStatus.Store(http.StatusOK)
	out, _, code = keys("--state", "failed")
	require.Equal(t, 0, code)
	require.Equal(t, "stripe:evt_c\tdelivered: 200\n", out)
	_, errOut, code = keys("--state", "failed")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "no FAILED events")

	for _, bad := range [][]string{{}, {"--state", "completed"}, {"--state", "failed", "stripe:evt_a"}, {"--provider", "stripe", "stripe:evt_a"}, {"nokey"}} {
		_, _, code = keys(bad...)
		require.Equal(t, 2, code, bad)
	}
}

// TestShutdownWaitsForARedrive: a redrive under way on the admin listener
// when serve is told to stop gets the deliveries' grace period to finish,
// even when the main listener has nothing to drain and stops at once.
func TestShutdownWaitsForARedrive(t *testing.T) {
	clearEnv(t)
	var slow atomic.Bool
	arrived := make(chan struct{}, 4)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slow.Load() {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		arrived <- struct{}{}
		time.Sleep(700 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	defer down.Close()
	adminAddr := freeAddr(t)
	t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
	t.Setenv("WEBHOOKD_ADMIN_ADDR", adminAddr)
	t.Setenv("WEBHOOKD_DATA_DIR", filepath.Join(t.TempDir(), "data"))
	t.Setenv("WEBHOOKD_DOWNSTREAM_URL", down.URL)
	t.Setenv("WEBHOOKD_STRIPE_SECRETS", testSecret)
	t.Setenv("WEBHOOKD_DISPATCH_TIMEOUT", "5s")
	cfg, err := loadConfig()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()
	base := "http://" + <-ready

	body := []byte(`{"id":"evt_grace","object":"event","type":"invoice.paid"}`)
	req, err := http.NewRequest(http.MethodPost, base+"/webhooks/stripe", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", stripeSignature(t, testSecret, time.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	slow.Store(true)
	type result struct {
		code int
		err  error
	}
	redriven := make(chan result, 1)
	go func() {
		resp, err := http.Post("http://"+adminAddr+"/api/records/stripe:evt_grace/redrive", "application/json", nil)
		if err != nil {
			redriven <- result{err: err}
			return
		}
		resp.Body.Close()
		redriven <- result{code: resp.StatusCode}
	}()
	<-arrived // the redrive is at the core now
	cancel()
	r := <-redriven
	require.NoError(t, r.err, "the redrive was cut by the shutdown")
	require.Equal(t, http.StatusOK, r.code)
	require.NoError(t, <-done)
}
