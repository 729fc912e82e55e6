package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/tracing"
)

const (
	euTestSecret = "whsec_e2e_eu_secret"
	usTestSecret = "whsec_e2e_us_secret"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
}

func routesYAML(billing, ledger string, ledgerToo bool) string {
	to := "[billing]"
	if ledgerToo {
		to = "[billing, ledger]"
	}
	return fmt.Sprintf(`sources:
  - {name: stripe-eu, provider: stripe, settings: {secrets: "${EU_SECRET}"}}
  - {name: stripe-us, provider: stripe, settings: {secrets: "${US_SECRET}"}}
destinations:
  - {name: billing, url: %q}
  - {name: ledger, url: %q, headers: {Authorization: "Bearer ${LEDGER_TOKEN}"}}
routes:
  - {source: stripe-eu, to: %s}
  - {source: stripe-us, types: ["invoice.*"], to: [ledger]}
`, billing, ledger, to)
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.yaml")
	writeFile(t, file, routesYAML("https://billing.internal/hook?token=secret-in-url", "http://ledger.internal", true))
	env := map[string]string{"EU_SECRET": euTestSecret, "US_SECRET": usTestSecret, "LEDGER_TOKEN": "tok-value"}
	out, errOut, code := execWebhookd(t, env, "config", "check", file)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Contains(t, out, "stripe-eu")
	require.Contains(t, out, "/webhooks/stripe-us")
	require.Contains(t, out, "billing,ledger", "each source's destinations")
	require.Contains(t, out, "EU_SECRET", "the variables it reads, by name")
	require.Contains(t, out, "LEDGER_TOKEN")
	for _, secret := range []string{euTestSecret, usTestSecret, "tok-value", "secret-in-url"} {
		require.NotContains(t, out+errOut, secret, "never a value")
	}
	require.Contains(t, out, "ok   "+file)

	env["WEBHOOKD_CONFIG"] = file
	out, _, code = execWebhookd(t, env, "config", "check")
	require.Equal(t, 0, code, "the variable's file: %s", out)

	writeFile(t, file, strings.Replace(routesYAML("http://b", "http://l", true), "to: [ledger]", "to: [ledgr]", 1))
	out, errOut, code = execWebhookd(t, env, "config", "check", file)
	require.Equal(t, 1, code, "%s%s", out, errOut)
	require.Equal(t, "FAIL "+file+":9: routes[1].to[0]: no destination \"ledgr\"\n", out)

	out, _, code = execWebhookd(t, env, "providers")
	require.Equal(t, 2, code, "providers loads the file serve would: %s", out)
}

func TestServeWithConfigAndReload(t *testing.T) {
	billing, ledger := newCore(t), newCore(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.yaml")
	writeFile(t, file, routesYAML(billing.URL, ledger.URL, false))
	s := startServe(t, map[string]string{
		"WEBHOOKD_CONFIG": file, "WEBHOOKD_DATA_DIR": filepath.Join(dir, "data"),
		"EU_SECRET": euTestSecret, "US_SECRET": usTestSecret, "LEDGER_TOKEN": "tok",
		// Ignored with a file, and said so.
		"WEBHOOKD_STRIPE_SECRETS": testSecret,
	})
	require.Contains(t, s.logs(), "WEBHOOKD_STRIPE_SECRETS is set but")

	post := func(source, secret, id string) int {
		body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","data":{"object":{}}}`, id))
		req, err := http.NewRequest(http.MethodPost, s.url+"/webhooks/"+source, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", stripeSignature(t, secret, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusCreated, post("stripe-eu", euTestSecret, "evt_1"))
	require.Equal(t, 1, billing.count("stripe-eu:evt_1"))
	require.Equal(t, "stripe-eu", billing.get("stripe-eu:evt_1", 0).header.Get("Webhook-Source"))
	require.Equal(t, http.StatusUnauthorized, post("stripe-us", euTestSecret, "evt_1"))
	require.Equal(t, http.StatusNotFound, post("stripe", testSecret, "evt_1"), "the variables' source is not served with a file")
	require.Equal(t, http.StatusCreated, post("stripe-us", usTestSecret, "evt_1"))
	require.Equal(t, "Bearer tok", ledger.get("stripe-us:evt_1", 0).header.Get("Authorization"))

	waitLog := func(msg string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(s.logs(), msg) < n {
			require.True(t, time.Now().Before(deadline), "no %q in:\n%s", msg, s.logs())
			time.Sleep(10 * time.Millisecond)
		}
	}
	writeFile(t, file, routesYAML(billing.URL, ledger.URL, true))
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
	waitLog("configuration reloaded", 1)
	require.Equal(t, http.StatusOK, post("stripe-eu", euTestSecret, "evt_2"), "two destinations: the acknowledgement")
	require.Equal(t, 1, billing.count("stripe-eu:evt_2"))
	require.Equal(t, 1, ledger.count("stripe-eu:evt_2"))

	writeFile(t, file, "sources: [")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
	waitLog("reload failed: the running configuration stays", 1)
	require.Equal(t, http.StatusOK, post("stripe-eu", euTestSecret, "evt_3"), "the running configuration serves on")
	require.Equal(t, 1, ledger.count("stripe-eu:evt_3"))
}

// TestReloadTarget is the target: a file of 100 sources and 20
// destinations reloads in under 100 ms, and no delivery is refused while
// it does.
func TestReloadTarget(t *testing.T) {
	var core atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { core.Add(1) }))
	t.Cleanup(srv.Close)
	var b strings.Builder
	b.WriteString("sources:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - {name: s%03d, provider: stripe, settings: {secrets: \"${S_SECRET}\"}}\n", i)
	}
	b.WriteString("destinations:\n")
	for i := range 20 {
		fmt.Fprintf(&b, "  - {name: d%02d, url: %q, headers: {Authorization: \"Bearer ${TOKEN}\"}}\n", i, srv.URL+fmt.Sprintf("/%d", i))
	}
	b.WriteString("routes:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - {source: s%03d, types: [\"invoice.*\", \"charge.*\"], where: {data.object.currency: eur}, to: [d%02d]}\n", i, i%20)
	}
	b.WriteString("  - {source: \"*\", to: [d00]}\n")
	dir := t.TempDir()
	file := filepath.Join(dir, "routes.yaml")
	writeFile(t, file, b.String())

	clearEnv(t)
	t.Setenv("S_SECRET", testSecret)
	t.Setenv("TOKEN", "tok")
	cfg, err := loadConfigFrom([]string{"WEBHOOKD_CONFIG=" + file})
	require.NoError(t, err)
	rt, err := newRouter(cfg, slog.New(slog.DiscardHandler), &tracing.Tracing{})
	require.NoError(t, err)
	require.Len(t, rt.Routes().Config.Sources, 100)

	store, err := lmdb.Open(filepath.Join(dir, "data"), lmdb.Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	h, err := receiver.New(receiver.Config{Routing: rt.Routes, Store: store, MaxBodyBytes: 1 << 16})
	require.NoError(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, refused atomic.Int32
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := []byte(fmt.Sprintf(`{"id":"evt_%d_%d","type":"invoice.paid","data":{"object":{"currency":"eur"}}}`, w, i))
				req := httptest.NewRequest(http.MethodPost, fmt.Sprintf("/webhooks/s%03d", i%100), bytes.NewReader(body))
				req.Header.Set("Stripe-Signature", stripeSignature(t, testSecret, time.Now(), body))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				sent.Add(1)
				if rec.Code >= 300 {
					refused.Add(1)
				}
			}
		}()
	}
	var took []time.Duration
	for range 7 {
		start := time.Now()
		require.NoError(t, rt.load())
		took = append(took, time.Since(start))
	}
	close(stop)
	wg.Wait()
	slices.Sort(took)
	t.Logf("reload of 100 sources and 20 destinations: median %s, max %s; %d deliveries meanwhile", took[len(took)/2], took[len(took)-1], sent.Load())
	if !raceEnabled {
		require.Less(t, took[len(took)/2], 100*time.Millisecond, "median reload")
	}
	require.NotZero(t, sent.Load())
	require.Zero(t, refused.Load(), "no delivery refused while reloading")
}

// TestKeysDestination: keys get and delete take --destination, required
// when the event went to several.
func TestKeysDestination(t *testing.T) {
	dir := t.TempDir()
	s, err := lmdb.Open(dir, lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	for _, k := range []string{"stripe-eu:evt_1\x1fbilling", "stripe-eu:evt_1\x1fledger"} {
		l, _, err := s.Claim(t.Context(), k, "fp", nil)
		require.NoError(t, err)
		require.NoError(t, s.Complete(t.Context(), l, dedupe.Response{Status: 200}))
	}
	require.NoError(t, s.Close())

	_, errOut, code := keysCmd(t, dir, "get", "stripe-eu:evt_1")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "billing, ledger")
	out, errOut, code := keysCmd(t, dir, "get", "--destination", "ledger", "stripe-eu:evt_1")
	require.Zero(t, code, errOut)
	require.Regexp(t, `(?m)^key\s+stripe-eu:evt_1$`, out)
	require.Regexp(t, `(?m)^destination\s+ledger$`, out)
	out, errOut, code = keysCmd(t, dir, "delete", "--destination", "ledger", "stripe-eu:evt_1")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "deleted stripe-eu:evt_1 (destination ledger)")
	out, errOut, code = keysCmd(t, dir, "get", "stripe-eu:evt_1")
	require.Zero(t, code, "one record left: %s", errOut)
	require.Regexp(t, `(?m)^destination\s+billing$`, out)
}

// TestProvidersShowsSources: with a file, webhookd providers adds its
// sources and destinations.
func TestProvidersShowsSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes.yaml")
	writeFile(t, file, routesYAML("http://billing.internal", "http://ledger.internal", true))
	out, errOut, code := execWebhookd(t, map[string]string{"WEBHOOKD_CONFIG": file, "EU_SECRET": euTestSecret,
		"US_SECRET": usTestSecret, "LEDGER_TOKEN": "t"}, "providers")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "sources of "+file)
	require.Regexp(t, `(?m)^stripe-us\s+/webhooks/stripe-us\s+stripe\s+ledger\s+US_SECRET$`, out)
}

// TestHangupWithoutAFile: without WEBHOOKD_CONFIG, SIGHUP is logged and
// ignored.
func TestHangupWithoutAFile(t *testing.T) {
	clearEnv(t)
	cfg, err := loadConfigFrom([]string{"WEBHOOKD_DOWNSTREAM_URL=http://core.internal", "WEBHOOKD_STRIPE_SECRETS=" + testSecret})
	require.NoError(t, err)
	var logs bytes.Buffer
	rt, err := newRouter(cfg, slog.New(slog.NewTextHandler(&logs, nil)), &tracing.Tracing{})
	require.NoError(t, err)
	before := rt.Routes()
	src, ok := before.Config.Source("stripe")
	require.True(t, ok, "the environment's source is named after its provider")
	require.Equal(t, "stripe", src.Entry.Name)
	rt.reload()
	require.Contains(t, logs.String(), "SIGHUP ignored")
	require.Same(t, before, rt.Routes())
}
