package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/redrive"
)

// chromium finds a Chromium (or Chrome) binary. Without one the browser
// test skips, except in CI (CI=true), where it must run: .ci/run installs
// Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary: the browser test must run in CI (.ci/run installs Debian's chromium)")
	}
	t.Skip("no chromium binary (apt-get install chromium); CI runs this test")
	return ""
}

// TestConsoleInBrowser drives the console in a real, headless Chromium:
// events are delivered to a receiver whose core service rejects some; the
// operator signs in, filters to FAILED, opens one, and redrives it once the
// core service is fixed, and sees it COMPLETED. With
// WEBHOOKD_UPDATE_SCREENSHOT=1 it rewrites docs/console.png.
func TestConsoleInBrowser(t *testing.T) {
	bin := chromium(t)
	const token = "console-browser-token"
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	down := newDownstream(t)
	fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	sa, err := spec.NewBuiltin("stripe", []string{"whsec_browser_test"}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(sa))
	recvHandler, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 1 << 20, StoreRequests: true})
	require.NoError(t, err)
	recv := httptest.NewServer(recvHandler)
	t.Cleanup(recv.Close)
	adminHandler, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd},
		Token: token, Providers: []string{"stripe", "xendit"}})
	require.NoError(t, err)
	console := httptest.NewServer(adminHandler)
	t.Cleanup(console.Close)

	deliver := func(id, typ string, core int) {
		down.status.Store(int32(core))
		event := []byte(`{"id":"` + id + `","object":"event","type":"` + typ + `","livemode":false,"data":{"object":{"id":"pi_` + id[4:] + `","object":"payment_intent","amount":250000,"currency":"idr","status":"succeeded"}}}`)
		signed, err := sa.Sign(event)
		body, hdr := signed.Body, signed.Header
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, recv.URL+"/webhooks/stripe", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = hdr
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, core, resp.StatusCode)
		time.Sleep(5 * time.Millisecond) // distinct arrival times, for a stable order
	}
	deliver("evt_1PaidInvoice", "invoice.paid", 200)
	deliver("evt_2ChargeOk", "charge.succeeded", 200)
	deliver("evt_3UnknownCustomer", "customer.subscription.updated", 422)
	deliver("evt_4Refund", "charge.refunded", 200)
	deliver("evt_5DisputeOpened", "charge.dispute.created", 422)
	deliver("evt_6PaymentIntent", "payment_intent.succeeded", 200)
	// An xendit record, as a second provider's delivery would leave it.
	l, _, err := store.Claim(context.Background(), "xendit:invoice.paid:inv_7f3a", "fp",
		dedupe.NewRequest("application/json", "invoice.paid", []byte(`{"event":"invoice.paid","data":{"id":"inv_7f3a","amount":99000}}`), true))

	require.NoError(t, err)
	require.NoError(t, store.Complete(context.Background(), l, dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}))

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 820),
	)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, steps...))
	}
	// The page's own querySelector, polled from here: a wait inside the
	// page would not survive the navigation a click starts.
	js := func(sel string) string { b, _ := json.Marshal(sel); return string(b) }
	waitFor := func(sel string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && !!document.querySelector(`+js(sel)+`)`))
			if err == nil && ok {
				return
			}
			require.True(t, time.Now().Before(deadline), "waiting for %s: %v", sel, err)
			time.Sleep(50 * time.Millisecond)
		}
	}
	click := func(sel string) {
		t.Helper()
		waitFor(sel)
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector(`+js(sel)+`).click(), true`))
		require.NoError(t, err)
	}
	setValue := func(sel, v string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector(`+js(sel)+`).value = `+js(v)+`, true`))
		require.NoError(t, err)
	}
	text := func(sel string) string {
		t.Helper()
		waitFor(sel)
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+js(sel)+`).innerText`))
		require.NoError(t, err)
		return strings.TrimSpace(s)
	}
	rows := func() []string {
		t.Helper()
		keys, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tr[data-key]")).map(e => e.dataset.key)`))
		require.NoError(t, err)
		return keys
	}

	// Signed out: the console is the sign-in form.
	do(chromedp.Navigate(console.URL + "/"))
	waitFor("#token")
	do(chromedp.SendKeys("#token", "wrong"))
	click("#signin")
	waitFor(".flash.bad")
	do(chromedp.SendKeys("#token", token))
	click("#signin")
	waitFor("table.records")
	require.Equal(t, []string{
		"xendit:invoice.paid:inv_7f3a", "stripe:evt_6PaymentIntent", "stripe:evt_5DisputeOpened", "stripe:evt_4Refund",
		"stripe:evt_3UnknownCustomer", "stripe:evt_2ChargeOk", "stripe:evt_1PaidInvoice",
	}, rows(), "newest first")
	if os.Getenv("WEBHOOKD_UPDATE_SCREENSHOT") == "1" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "console.png"), png, 0o644))
	}

	// Filter: stripe's FAILED deliveries.
	setValue("#provider", "stripe")
	setValue("#state", "FAILED")
	click("#filter")
	waitFor(`option[value="FAILED"][selected]`)
	require.Equal(t, []string{"stripe:evt_5DisputeOpened", "stripe:evt_3UnknownCustomer"}, rows())
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "state=FAILED")

	// Detail: the request pretty-printed, the core's rejection.
	click(`tr[data-key="stripe:evt_3UnknownCustomer"] a`)
	waitFor("#request-body")
	require.Equal(t, "FAILED", text("#record-state"))
	require.Contains(t, text("#request-body"), "\"id\": \"evt_3UnknownCustomer\"")
	require.Equal(t, "422", text("#response-status"))

	// The core is fixed: redrive, confirm, and the record is COMPLETED.
	down.status.Store(http.StatusOK)
	click("#redrive")
	click("#confirm")
	waitFor(".flash")
	require.Equal(t, "COMPLETED", text("#record-state"))
	require.Equal(t, "Redriven: the core service accepted it.", text(".flash"))
	require.Equal(t, "2", text("#attempts"))
	require.Equal(t, "200", text("#response-status"))
	req, body := down.last()
	require.Equal(t, "stripe:evt_3UnknownCustomer", req.Header.Get("Idempotency-Key"))
	require.Contains(t, body, `"id":"evt_3UnknownCustomer"`)
	rec, err := store.Get(context.Background(), "stripe:evt_3UnknownCustomer")
	require.NoError(t, err)
	require.Equal(t, dedupe.Completed, rec.State)

	// Delete, confirmed: gone from the list.
	click("#delete")
	click("#confirm")
	waitFor(".flash")
	require.NotContains(t, rows(), "stripe:evt_3UnknownCustomer")
	_, err = store.Get(context.Background(), "stripe:evt_3UnknownCustomer")
	require.ErrorIs(t, err, dedupe.ErrNotFound)
}
