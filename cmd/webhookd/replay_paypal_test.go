package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
)

// TestReplaySendsPaypalCapturedHeaders: PayPal fixtures are sent with the
// headers captured beside them, through a real serve whose PayPal
// certificate host and roots are the fake PayPal's (WEBHOOKD_PAYPAL_*), and
// one captured for another webhook is skipped with the reason, not sent.
func TestReplaySendsPaypalCapturedHeaders(t *testing.T) {
	fake := paypaltest.NewPlainServer(t)
	dir := t.TempDir()
	folder := filepath.Join(dir, "paypal")
	require.NoError(t, os.MkdirAll(folder, 0o755))
	capture := func(name, webhookID string) {
		body, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "paypal", name+".json"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(folder, name+".json"), body, 0o644))
		h := fake.Sign(paypaltest.Good, webhookID, "tx-"+name, time.Now(), body)
		flat := map[string]string{"Content-Type": "application/json"}
		for k := range h {
			flat[k] = h.Get(k)
		}
		raw, err := json.Marshal(flat)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(folder, name+".headers.json"), raw, 0o644))
	}
	capture("payment_capture_completed", "WH-LOCAL")
	capture("payment_capture_refunded", "WH-LOCAL")
	capture("checkout_order_approved", "WH-SOMEONE-ELSE")
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, fake.CAPEM, 0o644))

	clearEnv(t)
	core := newCore(t)
	t.Setenv("WEBHOOKD_DATA_DIR", t.TempDir())
	t.Setenv("WEBHOOKD_DOWNSTREAM_URL", core.URL)
	t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
	t.Setenv("WEBHOOKD_ADMIN_ADDR", "127.0.0.1:0")
	t.Setenv("WEBHOOKD_PAYPAL_WEBHOOK_IDS", "WH-LOCAL")
	t.Setenv("WEBHOOKD_PAYPAL_CERT_HOSTS", fake.Host())
	t.Setenv("WEBHOOKD_PAYPAL_CA_FILE", ca)
	cfg, err := loadConfig()
	require.NoError(t, err)
	require.NoError(t, cfg.checkServe())

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), ready) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	var addr string
	select {
	case addr = <-ready:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen")
	}

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"replay", "--url", "http://" + addr, "--repeat", "2", folder}, &stdout, &stderr)
	require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Equal(t, 2, core.total(), "the two captured for this webhook, once each:\n%s", stdout.String())
	require.Contains(t, stdout.String(), "skipped (its captured headers do not verify with the local configuration: delivery not authenticated: paypal: signature does not match)")
	require.Contains(t, stdout.String(), "; 1 fixture skipped")
	require.Contains(t, stdout.String(), "201 x1, 201 replayed x1")

	t.Run("a PayPal fixture without captured headers is a usage error", func(t *testing.T) {
		bare := filepath.Join(dir, "bare", "paypal")
		require.NoError(t, os.MkdirAll(bare, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(bare, "x.json"), []byte(`{"id":"WH-1","event_type":"X"}`), 0o644))
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(context.Background(), []string{"replay", "--url", "http://" + addr, bare}, &stdout, &stderr))
		require.Contains(t, stderr.String(), "only paypal can sign its deliveries, and no captured headers are beside it")
	})
}
