package dispatch_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/webhookverify"
)

const (
	downstreamSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rotatedSecret    = "a-plain-secret-of-enough-bytes"
)

// capture is a core service that keeps each request's header and body and
// answers the next of statuses (200 when they run out).
type capture struct {
	mu       sync.Mutex
	headers  []http.Header
	bodies   [][]byte
	statuses []int
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.headers = append(c.headers, r.Header.Clone())
	c.bodies = append(c.bodies, body)
	status := http.StatusOK
	if n := len(c.headers); n <= len(c.statuses) {
		status = c.statuses[n-1]
	}
	c.mu.Unlock()
	w.WriteHeader(status)
}

func TestSignedForwardVerifies(t *testing.T) {
	core := &capture{}
	srv := httptest.NewServer(core)
	t.Cleanup(srv.Close)
	f := newForwarder(t, srv.URL, func(o *dispatch.Options) { o.SigningSecrets = []string{downstreamSecret} })
	require.True(t, f.Signed())

	res := f.Forward(context.Background(), testRequest())
	require.Equal(t, dispatch.Delivered, res.Outcome)
	require.Len(t, core.headers, 1)
	h, body := core.headers[0], core.bodies[0]
	require.Equal(t, "stripe:evt_1", h.Get("Webhook-Id"), "webhook-id is the Idempotency-Key")
	require.Equal(t, oddBody, body, "signing leaves the body alone")
	require.NoError(t, webhookverify.Verify(downstreamSecret, h, body, time.Minute))

	// One changed byte anywhere in the body fails.
	for i := range body {
		tampered := bytes.Clone(body)
		tampered[i]++
		require.ErrorIs(t, webhookverify.Verify(downstreamSecret, h, tampered, time.Minute), webhookverify.ErrNoValidSignature, "byte %d", i)
	}
	// So does another id, or another secret.
	other := h.Clone()
	other.Set("Webhook-Id", "stripe:evt_2")
	require.ErrorIs(t, webhookverify.Verify(downstreamSecret, other, body, time.Minute), webhookverify.ErrNoValidSignature)
	require.ErrorIs(t, webhookverify.Verify(rotatedSecret, h, body, time.Minute), webhookverify.ErrNoValidSignature)
}

func TestSignedForwardRotation(t *testing.T) {
	core := &capture{}
	srv := httptest.NewServer(core)
	t.Cleanup(srv.Close)
	f := newForwarder(t, srv.URL, func(o *dispatch.Options) { o.SigningSecrets = []string{rotatedSecret, downstreamSecret} })
	require.Equal(t, dispatch.Delivered, f.Forward(context.Background(), testRequest()).Outcome)
	h := core.headers[0]
	require.Len(t, strings.Fields(h.Get("Webhook-Signature")), 2)
	for _, secret := range []string{rotatedSecret, downstreamSecret} {
		require.NoError(t, webhookverify.Verify(secret, h, core.bodies[0], time.Minute))
	}
}

func TestEachAttemptIsSignedAfresh(t *testing.T) {
	core := &capture{statuses: []int{503, 502, 200}}
	srv := httptest.NewServer(core)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	clock := time.Now().Add(-time.Minute)
	f := newForwarder(t, srv.URL, func(o *dispatch.Options) {
		o.SigningSecrets = []string{downstreamSecret}
		o.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(7 * time.Second)
			return clock
		}
	})
	res := f.Forward(context.Background(), testRequest())
	require.Equal(t, dispatch.Delivered, res.Outcome)
	require.Equal(t, 3, res.Attempts)
	seen := map[string]bool{}
	for i, h := range core.headers {
		require.NoError(t, webhookverify.Verify(downstreamSecret, h, core.bodies[i], 5*time.Minute), "attempt %d", i+1)
		require.Equal(t, "stripe:evt_1", h.Get("Webhook-Id"), "the id stays, so the core can dedupe")
		seen[h.Get("Webhook-Timestamp")] = true
	}
	require.Len(t, seen, 3, "one timestamp per attempt")
}

func TestUnsignedForwardCarriesNoSignature(t *testing.T) {
	core := &capture{}
	srv := httptest.NewServer(core)
	t.Cleanup(srv.Close)
	f := newForwarder(t, srv.URL, nil)
	require.False(t, f.Signed())
	require.Equal(t, dispatch.Delivered, f.Forward(context.Background(), testRequest()).Outcome)
	for _, name := range []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
		require.Empty(t, core.headers[0].Get(name), name)
	}
}

func TestSigningSecretsAreChecked(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		want    string
	}{
		{"not base64", []string{"whsec_c2VjcmV0LXZhbHVl!!"}, "secret 1 of 1"},
		{"empty", []string{downstreamSecret, ""}, "secret 2 of 2"},
		{"short plain", []string{"hunter2-short"}, "at least 16"},
		{"short whsec", []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("8 bytes!"))}, "at least 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dispatch.New(dispatch.Options{URL: "http://core/", Timeout: time.Second, SigningSecrets: tt.secrets})
			require.ErrorIs(t, err, dispatch.ErrInvalidOptions)
			require.Contains(t, err.Error(), tt.want)
			for _, s := range tt.secrets {
				if s != "" {
					require.NotContains(t, err.Error(), strings.TrimPrefix(s, "whsec_"))
				}
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://core.example/hooks", "https://core.example/hooks"},
		{"https://core.example/hooks?token=s3cret&x=1", "https://core.example/hooks?redacted"},
		{"https://user:pa55@core.example:8443/hooks?", "https://core.example:8443/hooks"},
		{"http://core.example/hooks#frag", "http://core.example/hooks"},
		{"http://[::1]:9000/?k=v", "http://[::1]:9000/?redacted"},
		{"http://bad host/%zz", "(unparsable URL)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, dispatch.RedactURL(tt.in), tt.in)
	}
}

// The core service URL often carries a token in its query: it must not
// reach Result.Err or the logs.
func TestForwardErrorsAndLogsHideTheURLQuery(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused

	const token = "tok-3f9a1c-must-not-leak"
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, raw := range []string{
		"http://" + addr + "/events?token=" + token,
		"http://webhookd:" + token + "@" + addr + "/events",
		"http://" + addr + "/events?a=b&token=" + token + "#" + token,
		// retryablehttp masks the password as "xxxxx", so its spelling of
		// this URL is neither the configured one nor net/url's.
		"http://webhookd:secret-pass@" + addr + "/events?token=" + token,
	} {
		f := newForwarder(t, raw, func(o *dispatch.Options) { o.Logger = log })
		require.NotContains(t, f.RedactedURL(), token)
		res := f.Forward(context.Background(), testRequest())
		require.Equal(t, dispatch.Unavailable, res.Outcome)
		require.Error(t, res.Err)
		require.Contains(t, res.Err.Error(), addr, "the error still says where it failed")
		require.NotContains(t, res.Err.Error(), token)
	}
	require.Contains(t, buf.String(), "request failed", "debug records were written")
	require.NotContains(t, buf.String(), token)
	require.NotContains(t, buf.String(), "secret-pass")

	// Cancellation stays recognisable through the redaction.
	f := newForwarder(t, "http://"+addr+"/?token="+token, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := f.Forward(ctx, testRequest())
	require.ErrorIs(t, res.Err, context.Canceled)
	require.NotContains(t, res.Err.Error(), token)
}

func TestResultDuration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	res := newForwarder(t, srv.URL, nil).Forward(context.Background(), testRequest())
	require.Equal(t, dispatch.Delivered, res.Outcome)
	require.GreaterOrEqual(t, res.Duration, 20*time.Millisecond)
	require.Less(t, res.Duration, 2*time.Second)
}
