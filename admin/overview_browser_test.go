package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/redrive"
)

// TestOverviewInBrowser sends a mixed load through a real receiver
// (forwarded, replayed, 401, 503 while the core is down, the core's 422
// left FAILED) spread over the last hour, then opens the overview in a
// headless Chromium and reads what a person sees: each provider's figures
// as text, a chart with its title and description, the table, and the
// links to the filtered lists. With WEBHOOKD_UPDATE_SCREENSHOT=1 it
// rewrites docs/overview.png.
func TestOverviewInBrowser(t *testing.T) {
	bin := chromium(t)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	down := newDownstream(t)
	fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: 2 * time.Second, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond})
	require.NoError(t, err)
	sa, err := spec.NewBuiltin("stripe", []string{"whsec_overview_test"}, nil, nil)
	require.NoError(t, err)
	xa, err := spec.NewBuiltin("xendit", []string{"xnd-overview-token"}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(sa))
	require.NoError(t, reg.Register(xa))

	// The recorder's clock walks through the last hour, so that the
	// chart has bars across it.
	var mu sync.Mutex
	at := time.Now().Add(-58 * time.Minute)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	rec := overview.NewRecorder([]string{"stripe", "xendit"}, clock)
	recvHandler, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 1 << 20,
		StoreRequests: true, OnDelivery: rec.Observe})
	require.NoError(t, err)
	recv := httptest.NewServer(recvHandler)
	t.Cleanup(recv.Close)
	adminHandler, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd},
		Providers: []string{"stripe", "xendit"}, Overview: rec})
	require.NoError(t, err)
	console := httptest.NewServer(adminHandler)
	t.Cleanup(console.Close)

	post := func(provider string, body []byte, hdr http.Header, want int) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, recv.URL+"/webhooks/"+provider, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = hdr
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "%s %s", provider, body)
	}
	stripeEvent := func(id string, core, want int) {
		t.Helper()
		down.status.Store(int32(core))
		signed, err := sa.Sign([]byte(`{"id":"` + id + `","object":"event","type":"charge.succeeded","data":{"object":{"id":"ch_1"}}}`))
		body, hdr := signed.Body, signed.Header
		require.NoError(t, err)
		post("stripe", body, hdr, want)
	}
	xenditEvent := func(id string, core, want int) {
		t.Helper()
		down.status.Store(int32(core))
		signed, err := xa.Sign([]byte(`{"id":"` + id + `","external_id":"inv-` + id + `","status":"PAID","amount":185000}`))
		body, hdr := signed.Body, signed.Header
		require.NoError(t, err)
		post("xendit", body, hdr, want)
	}

	n := 0
	for minute := 0; minute < 58; minute += 2 {
		mu.Lock()
		at = at.Add(2 * time.Minute)
		mu.Unlock()
		for range 1 + minute%5 {
			n++
			stripeEvent(fmt.Sprintf("evt_ok_%d", n), 200, 200)
		}
		if minute%3 == 0 {
			n++
			xenditEvent(fmt.Sprintf("x%d", n), 200, 200)
		}
		switch {
		case minute%7 == 0: // a provider's retry of a finished event
			stripeEvent(fmt.Sprintf("evt_ok_%d", n-1), 200, 200)
		case minute%11 == 0: // a forged callback
			post("stripe", []byte(`{"id":"evt_forged"}`), http.Header{"Stripe-Signature": {"t=1,v1=00"}}, http.StatusUnauthorized)
		case minute >= 40 && minute < 46: // the core is down
			n++
			stripeEvent(fmt.Sprintf("evt_down_%d", n), 503, 503)
			xenditEvent(fmt.Sprintf("xdown%d", n), 503, 503)
		case minute%13 == 0: // the core refuses it: FAILED
			n++
			stripeEvent(fmt.Sprintf("evt_refused_%d", n), 422, 422)
		}
	}

	// The JSON names outcomes as the metric's label does.
	resp, err := http.Get(console.URL + "/api/summary?window=1h")
	require.NoError(t, err)
	var sum overview.Summary
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&sum))
	resp.Body.Close()
	stripeSum := sum.Providers[0]
	require.Equal(t, "stripe", stripeSum.Provider)
	for _, o := range []string{"forwarded", "replayed", "unauthorized", "unavailable", "core_rejected"} {
		require.NotZero(t, stripeSum.Outcomes[o], o)
	}
	require.NotZero(t, stripeSum.Failed.Waiting)

	ctx := browser(t, bin, 1280, 1700)
	js := func(sel string) string { b, _ := json.Marshal(sel); return string(b) }
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+js(sel)+`) || {innerText: ""}).innerText`))
		require.NoError(t, err)
		return strings.TrimSpace(s)
	}
	attr := func(sel, expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+js(sel)+`).`+expr))
		require.NoError(t, err)
		return strings.TrimSpace(s)
	}

	// The console's first screen links to the overview.
	_, err = chromedp.Run(ctx, chromedp.Navigate(console.URL+"/"))
	require.NoError(t, err)
	require.Equal(t, "/overview", attr(`header nav a`, `getAttribute("href")`))
	_, err = chromedp.Run(ctx, chromedp.Navigate(console.URL+"/overview"))
	require.NoError(t, err)

	require.Equal(t, "1h", text(`.windows a[aria-current="page"]`))
	require.Equal(t, fmt.Sprint(stripeSum.Total), text(`#provider-stripe [data-figure="total"]`))
	share := fmt.Sprintf("%.1f%%", 100*(*stripeSum.Core.Share))
	require.Equal(t, share, text(`#provider-stripe [data-figure="share"]`))
	require.Contains(t, text(`#provider-stripe .tiles`), "below 99%", "a share below 99% is said in words, not only in red")
	require.Regexp(t, `^\d+ ms / \d+ ms$`, text(`#provider-stripe [data-figure="latency"]`))
	require.Equal(t, fmt.Sprint(stripeSum.Failed.Waiting), text(`#provider-stripe [data-figure="failed"]`))
	require.Contains(t, text(`#provider-stripe .tiles`), "oldest ")
	require.Equal(t, "/?provider=stripe&state=FAILED", attr(`#provider-stripe [data-figure="failed"] a`, `getAttribute("href")`))

	// The chart is an image with a title and a description in words, and
	// its bars have titles a pointer or a screen reader can reach.
	require.Equal(t, "stripe: deliveries per 2 minutes over the last hour", attr(`#provider-stripe svg.chart title`, `textContent`))
	desc := attr(`#provider-stripe svg.chart desc`, `textContent`)
	require.Contains(t, desc, fmt.Sprintf("%d deliveries: %d forwarded", stripeSum.Total, stripeSum.Outcomes["forwarded"]))
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#provider-stripe svg.chart > g").length`))
	require.NoError(t, err)
	require.Equal(t, 30, bars)
	require.Contains(t, attr(`.legend`, `textContent`), "unavailable (unavailable, error)")

	// The table alternative holds the same counts.
	require.Equal(t, fmt.Sprint(stripeSum.Outcomes["forwarded"]), text(`tr[data-provider="stripe"] td`))
	require.Contains(t, text(`table.outcomes thead`), "core_rejected")

	// Another window, and the filtered list it links to.
	_, err = chromedp.Run(ctx, chromedp.Navigate(console.URL+"/overview?window=15m"))
	require.NoError(t, err)
	require.Equal(t, "15m", text(`.windows a[aria-current="page"]`))
	if os.Getenv("WEBHOOKD_UPDATE_SCREENSHOT") == "1" {
		_, err = chromedp.Run(ctx, chromedp.Navigate(console.URL+"/overview?window=1h"))
		require.NoError(t, err)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "overview.png"), png, 0o644))
	}
	_, err = chromedp.Run(ctx, chromedp.Navigate(console.URL+"/?provider=stripe&state=FAILED"))
	require.NoError(t, err)
	keys, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tr[data-key]")).map(e => e.dataset.key)`))
	require.NoError(t, err)
	require.Len(t, keys, int(stripeSum.Failed.Waiting))
}

// browser starts a headless Chromium with a window of w by h pixels.
func browser(t *testing.T, bin string, w, h int) context.Context {
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
		chromedp.WindowSize(w, h),
	)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}
