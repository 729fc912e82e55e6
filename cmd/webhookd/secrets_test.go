package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/webhookverify"
)

// TestNoSecretInLogsOrAnswers configures every secret webhookd holds, drives
// each error path, and scans the whole log (at Debug) and every answer for
// them, for the signatures and for the bodies.
func TestNoSecretInLogsOrAnswers(t *testing.T) {
	const (
		stripeSecret  = "whsec_c3RyaXBlLXNpZ25pbmcta2V5LXZhbHVl"
		downKey       = "downstream-signing-key-bytes!!"
		urlToken      = "url-token-5c1e9d0a"
		bodyMarker    = "cardholder-name-body-marker"
		answerMarker  = "core-answer-marker"
		mustNotAppear = "must-not-appear-7d1"
	)
	downSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(downKey))

	var coreMu sync.Mutex
	var coreSigs []string
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		coreMu.Lock()
		coreSigs = append(coreSigs, r.Header.Get("Webhook-Signature"))
		coreMu.Unlock()
		if err := webhookverify.Verify(downSecret, r.Header, body, time.Minute); err != nil {
			t.Errorf("a forward is not signed: %v", err)
		}
		switch {
		case bytes.Contains(body, []byte("evt_reject")):
			w.WriteHeader(http.StatusUnprocessableEntity)
		case bytes.Contains(body, []byte("evt_down")):
			w.WriteHeader(http.StatusBadGateway)
		case bytes.Contains(body, []byte("evt_reset")):
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return
		default:
			w.WriteHeader(http.StatusOK)
		}
		_, _ = w.Write([]byte(`{"ok":"` + answerMarker + `"}`))
	}))
	defer core.Close()

	clearEnv(t)
	for k, v := range map[string]string{
		"WEBHOOKD_ADDR":              "127.0.0.1:0",
		"WEBHOOKD_ADMIN_ADDR":        "127.0.0.1:0",
		"WEBHOOKD_DATA_DIR":          t.TempDir(),
		"WEBHOOKD_DOWNSTREAM_URL":    core.URL + "/events?token=" + urlToken,
		"WEBHOOKD_DOWNSTREAM_SECRET": downSecret,
		"WEBHOOKD_STRIPE_SECRETS":    stripeSecret,
		"WEBHOOKD_DISPATCH_RETRIES":  "1",
		"WEBHOOKD_MAX_BODY_BYTES":    "2048",
		"WEBHOOKD_LOG_FORMAT":        "json",
		"WEBHOOKD_LOG_LEVEL":         "debug",
	} {
		t.Setenv(k, v)
	}
	cfg, err := loadConfig()
	require.NoError(t, err)
	require.NoError(t, cfg.checkServe())
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, newLogger(cfg, &logs), ready) }()
	base := "http://" + <-ready

	var answers []string
	var sent []string // every Stripe-Signature sent
	do := func(method, path string, body []byte, header http.Header) int {
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		require.NoError(t, err)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var h bytes.Buffer
		_ = resp.Header.Write(&h)
		answers = append(answers, h.String()+string(b))
		return resp.StatusCode
	}
	event := func(id string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"charge.succeeded","data":{"object":{"name":%q}}}`, id, bodyMarker)
	}
	post := func(body []byte, sig string) int {
		sent = append(sent, sig)
		return do(http.MethodPost, "/webhooks/stripe", body, http.Header{"Stripe-Signature": {sig}, "Content-Type": {"application/json"}})
	}
	signed := func(body []byte) string { return stripeSignature(t, stripeSecret, time.Now(), body) }

	require.Equal(t, 200, post(event("evt_ok"), signed(event("evt_ok"))))
	require.Equal(t, 200, post(event("evt_ok"), signed(event("evt_ok"))))                                                // replayed
	require.Equal(t, 422, post(event("evt_reject"), signed(event("evt_reject"))))                                        // rejected
	require.Equal(t, 503, post(event("evt_down"), signed(event("evt_down"))))                                            // core 502
	require.Equal(t, 503, post(event("evt_reset"), signed(event("evt_reset"))))                                          // connection reset: an error quoting the URL
	require.Equal(t, 401, post(event("evt_forged"), signed(event("evt_other"))))                                         // signature of another body
	require.Equal(t, 401, post(event("evt_forged"), stripeSignature(t, stripeSecret, time.Now().Add(-time.Hour), nil)))  // stale
	require.Equal(t, 401, post(event("evt_forged"), stripeSignature(t, "whsec_wrong", time.Now(), event("evt_forged")))) // wrong secret
	require.Equal(t, 401, post(event("evt_forged"), "t=garbage,v1="+mustNotAppear))
	require.Equal(t, 400, post([]byte(bodyMarker), signed([]byte(bodyMarker))))
	require.Equal(t, 422, post(bytes.Replace(event("evt_ok"), []byte(bodyMarker), []byte("other"), 1), signed(bytes.Replace(event("evt_ok"), []byte(bodyMarker), []byte("other"), 1))))
	big := append(event("evt_big"), bytes.Repeat([]byte(" "), 4096)...)
	require.Equal(t, 413, post(big, signed(big)))
	require.Equal(t, 404, do(http.MethodPost, "/webhooks/paypal?key="+mustNotAppear, event("evt_x"), nil))
	require.Equal(t, 200, do(http.MethodGet, "/readyz", nil, nil))
	require.Equal(t, 200, do(http.MethodGet, "/metrics", nil, nil))

	cancel()
	require.NoError(t, <-served)

	out := logs.String()
	require.Contains(t, out, `"downstream_error"`, "the connection error was logged")
	require.Contains(t, out, "/events?redacted", "in redacted form")
	require.Contains(t, out, `"level":"DEBUG"`, "debug records were written and scanned")

	forbidden := []string{
		stripeSecret, strings.TrimPrefix(stripeSecret, "whsec_"),
		downSecret, strings.TrimPrefix(downSecret, "whsec_"), downKey,
		urlToken, bodyMarker, mustNotAppear,
	}
	for _, sig := range sent {
		if _, v1, ok := strings.Cut(sig, "v1="); ok && len(v1) > 8 {
			forbidden = append(forbidden, v1)
		}
	}
	coreMu.Lock()
	for _, sig := range coreSigs {
		forbidden = append(forbidden, strings.TrimPrefix(sig, "v1,"))
	}
	coreMu.Unlock()
	for _, s := range forbidden {
		require.NotContains(t, out, s, "log")
		for i, a := range answers {
			if s == bodyMarker {
				continue // checked below: answers relay the core's body, never the provider's
			}
			require.NotContains(t, a, s, "answer %d", i)
		}
	}
	for i, a := range answers {
		require.NotContains(t, a, bodyMarker, "answer %d echoes the provider's body", i)
	}
	require.Contains(t, strings.Join(answers, ""), answerMarker, "answers were captured")
}

func TestConfigErrorsNeverEchoSecrets(t *testing.T) {
	tests := []struct {
		env    map[string]string
		want   string
		secret string
	}{
		{map[string]string{"WEBHOOKD_DOWNSTREAM_SECRET": "whsec_c2VjcmV0LXNlY3JldA==!"}, "WEBHOOKD_DOWNSTREAM_SECRET: ", "c2VjcmV0LXNlY3JldA"},
		{map[string]string{"WEBHOOKD_DOWNSTREAM_SECRET": "short-s3cret"}, "WEBHOOKD_DOWNSTREAM_SECRET: a key is 12 bytes", "short-s3cret"},
		{map[string]string{"WEBHOOKD_DOWNSTREAM_SECRET": "a-long-enough-secret-value,"}, "WEBHOOKD_DOWNSTREAM_SECRET: ", "a-long-enough-secret-value"},
		{map[string]string{"WEBHOOKD_DOWNSTREAM_URL": "core.internal:9000/events?token=t0ken-value"}, "WEBHOOKD_DOWNSTREAM_URL: ", "t0ken-value"},
		{map[string]string{"WEBHOOKD_DOWNSTREAM_URL": "ftp://user:passw0rd@core/"}, "WEBHOOKD_DOWNSTREAM_URL: ", "passw0rd"},
		{map[string]string{"WEBHOOKD_SHUTDOWN_GRACE": "-1s"}, "WEBHOOKD_SHUTDOWN_GRACE: ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("WEBHOOKD_DOWNSTREAM_URL", "http://localhost:9000/")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stderr bytes.Buffer
			require.Equal(t, 2, run(context.Background(), []string{"serve"}, &bytes.Buffer{}, &stderr))
			line := strings.TrimPrefix(stderr.String(), "webhookd: configuration: ")
			require.True(t, strings.HasPrefix(line, tt.want), "got %q", stderr.String())
			if tt.secret != "" {
				require.NotContains(t, stderr.String(), tt.secret)
			}
		})
	}
}

func TestShutdownGraceDefaultsToTheDispatchTimeout(t *testing.T) {
	clearEnv(t)
	t.Setenv("WEBHOOKD_DISPATCH_TIMEOUT", "7s")
	c, err := loadConfig()
	require.NoError(t, err)
	require.Equal(t, 7*time.Second, c.ShutdownGrace)
	t.Setenv("WEBHOOKD_SHUTDOWN_GRACE", "20s")
	c, err = loadConfig()
	require.NoError(t, err)
	require.Equal(t, 20*time.Second, c.ShutdownGrace)
}
