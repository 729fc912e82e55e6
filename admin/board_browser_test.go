package admin_test

import (
	"context"
	"fmt"
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
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/redrive"
)

// TestBoardInBrowser opens the overview of twenty sources in a headless
// Chromium 1400 pixels wide and checks what docs/contract.md asks of the
// board: it comes first, and every source's row ends within the first
// 1000 pixels; each row says its state now, apart from the window's
// figures (a source that failed ten minutes ago and delivers now is
// "delivering", not red); refusals are named by reason, apart from the
// core's rejections; each row names its destinations with their share
// delivered, and a queue destination's depth and oldest from the store.
// With WEBHOOKD_UPDATE_SCREENSHOT=1 it rewrites
// docs/overview-board.png (the first screen).
func TestBoardInBrowser(t *testing.T) {
	bin := chromium(t)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	fwd, err := dispatch.New(dispatch.Options{URL: "http://127.0.0.1:1", Timeout: time.Second})
	require.NoError(t, err)

	names := []string{"adyen", "airwallex", "checkout", "coinbase", "doku", "duitku", "flutterwave", "gocardless", "lemonsqueezy",
		"mercadopago", "midtrans", "mollie", "paddle", "paypal", "paystack", "razorpay", "shopify", "square", "standard", "stripe"}
	var mu sync.Mutex
	at := time.Now().Add(-50 * time.Minute)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	rec := overview.NewRecorder(names, clock)
	// Every source delivers to billing (sync); the first five also queue
	// for ledger, where three events wait.
	queueing := names[:5]
	for i := range 3 {
		_, err := store.Enqueue(context.Background(), dedupe.Enqueue{
			Key:         dedupe.Key{Source: "adyen", Event: fmt.Sprintf("evt_q%d", i), Destination: "ledger"}.String(),
			Fingerprint: "fp", MaxAge: time.Hour, Request: dedupe.NewRequest("application/json", "payment", []byte(`{}`), true)})
		require.NoError(t, err)
	}
	ok := func(p string) receiver.Delivery {
		return receiver.Delivery{Provider: p, Destination: "billing", Outcome: receiver.OutcomeForwarded, Status: 200,
			Dispatch: &dispatch.Result{Outcome: dispatch.Delivered, Status: 200, Duration: 30 * time.Millisecond}}
	}
	for step := range 25 {
		mu.Lock()
		at = at.Add(2 * time.Minute)
		mu.Unlock()
		for i, p := range names {
			for range 1 + (i+step)%4 {
				rec.Observe(ok(p))
			}
			if i < len(queueing) {
				rec.Observe(receiver.Delivery{Provider: p, Destination: "ledger", Outcome: receiver.OutcomeQueued, Status: 200})
			}
		}
		// stripe: the core was down 20 minutes ago, and has recovered.
		if step == 15 {
			rec.Observe(receiver.Delivery{Provider: "stripe", Destination: "billing", Outcome: receiver.OutcomeUnavailable, Status: 503,
				Dispatch: &dispatch.Result{Outcome: dispatch.Unavailable, Status: 503, Duration: time.Second}})
		}
		// paddle: forged requests all along; shopify: a rotated secret now.
		if step%3 == 0 {
			rec.Observe(receiver.Delivery{Provider: "paddle", Outcome: receiver.OutcomeUnauthorized, Status: 401, Reason: "signature_missing"})
		}
		if step >= 22 {
			rec.Observe(receiver.Delivery{Provider: "shopify", Outcome: receiver.OutcomeUnauthorized, Status: 401, Reason: "signature_invalid"})
		}
		// mollie: the core rejects some now.
		if step == 24 {
			rec.Observe(receiver.Delivery{Provider: "mollie", Outcome: receiver.OutcomeCoreRejected, Status: 422,
				Dispatch: &dispatch.Result{Outcome: dispatch.Rejected, Status: 422, Duration: 40 * time.Millisecond}})
		}
	}
	h, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd}, Providers: names, Overview: rec,
		Queue: store, Destinations: func() []admin.Destination {
			return []admin.Destination{
				{Name: "billing", Delivery: "sync", Sources: names},
				{Name: "ledger", Delivery: "queue", MaxAge: time.Hour, Sources: queueing},
			}
		}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	console := srv.URL

	ctx := browser(t, bin, 1400, 1000)
	// The viewport itself 1400 × 1000, whatever the window's own frame
	// takes: the screenshot is then the first screen.
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(console+"/overview")))
	inner, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[window.innerWidth, window.innerHeight]`))
	require.NoError(t, err)
	require.Equal(t, []int{1400, 1000}, inner)
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
	require.NoError(t, err)
	require.True(t, wide, "the board fits 1400 pixels without scrolling sideways")
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]any](`Array.from(document.querySelectorAll("table.board tbody tr")).map(r => ({
		source: r.dataset.source, state: r.dataset.state, bottom: r.getBoundingClientRect().bottom,
		refused: r.querySelector('[data-figure="refused"]').innerText, core: r.querySelector('[data-figure="core-rejected"]').innerText,
		dests: r.querySelector('[data-figure="destinations"]').innerText,
		spark: !!r.querySelector("svg.spark title")}))`))
	require.NoError(t, err)
	require.Len(t, rows, 20)
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main > table, main > section, main > ul").className`))
	require.NoError(t, err)
	require.Contains(t, first, "board", "the board opens the page")
	states := map[string]string{}
	for _, r := range rows {
		require.LessOrEqual(t, r["bottom"].(float64), 1000.0, "%s is below the first screen", r["source"])
		require.True(t, r["spark"].(bool), "%s has a sparkline with a title", r["source"])
		states[r["source"].(string)] = r["state"].(string)
	}
	require.Equal(t, "delivering", states["stripe"], "recovered twenty minutes ago: not red now")
	require.Equal(t, "refusing", states["shopify"])
	require.Equal(t, "failing", states["mollie"], "the core's rejection is a delivery that did not reach its destination")
	for _, r := range rows {
		switch r["source"] {
		case "shopify":
			require.Equal(t, "signature_invalid 3", r["refused"])
		case "paddle":
			require.Equal(t, "signature_missing 9", r["refused"])
		case "mollie":
			require.Equal(t, "none", r["refused"], "the core's rejection is not webhookd's refusal")
			require.Equal(t, "1", r["core"])
			require.Equal(t, "billing 100%", r["dests"], "a rejection reached the core")
		case "stripe":
			require.Regexp(t, `^billing 9\d\.\d%$`, r["dests"], "one delivery of the window did not reach it")
		case "adyen", "coinbase":
			require.Regexp(t, `^billing 100% · ledger 3 queued, oldest \d+s$`, r["dests"], "the queue is ledger's, whichever source")
		}
	}
	tile, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#provider-stripe .tiles").innerText`))
	require.NoError(t, err)
	require.Contains(t, tile, "delivering")
	require.Contains(t, strings.ToLower(tile), "reached the core in the window")
	warn, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#provider-stripe .tiles .warn").length`))
	require.NoError(t, err)
	require.Zero(t, warn, "a recovered source's tiles are not red")

	if os.Getenv("WEBHOOKD_UPDATE_SCREENSHOT") == "1" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "overview-board.png"), png, 0o644))
	}
}

// TestRequestLogInBrowser fills the request log with the mix and
// uses its console page as an operator would: filters by outcome and
// reason, and follows a verified entry to its record. With
// WEBHOOKD_UPDATE_SCREENSHOT=1 it rewrites docs/requests.png.
func TestRequestLogInBrowser(t *testing.T) {
	bin := chromium(t)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	fwd, err := dispatch.New(dispatch.Options{URL: "http://127.0.0.1:1", Timeout: time.Second})
	require.NoError(t, err)
	ctx0 := context.Background()
	_, _, err = store.Claim(ctx0, "stripe:evt_ok", "fp", nil)
	require.NoError(t, err)
	now := time.Now()
	var entries []dedupe.LoggedRequest
	add := func(e dedupe.LoggedRequest) {
		e.Time = now.Add(time.Duration(len(entries)-40) * time.Second)
		if e.RemoteAddr == "" {
			e.RemoteAddr = "203.0.113.7:51234"
		}
		entries = append(entries, e)
	}
	add(dedupe.LoggedRequest{Source: "stripe", Provider: "stripe", Outcome: "forwarded", Status: 200, Size: 1422, EventKey: "evt_ok", Type: "charge.succeeded"})
	for i := range 6 {
		add(dedupe.LoggedRequest{Source: "stripe", Provider: "stripe", Outcome: "unauthorized", Reason: "signature_invalid", Status: 401, Size: 1422})
		add(dedupe.LoggedRequest{Source: "paddle", Provider: "paddle", Outcome: "unauthorized", Reason: "timestamp_outside_tolerance", Status: 401, Size: 903})
		if i%2 == 0 {
			add(dedupe.LoggedRequest{Source: "stripe", Provider: "stripe", Outcome: "unavailable", Status: 503, Size: 1390, EventKey: fmt.Sprintf("evt_down_%d", i), Type: "invoice.paid"})
		}
	}
	add(dedupe.LoggedRequest{Source: "wp-login.php", Outcome: "not_found", Reason: "unknown_source", Status: 404, RemoteAddr: "198.51.100.9:40000"})
	add(dedupe.LoggedRequest{Source: "stripe", Provider: "stripe", Outcome: "core_rejected", Status: 422, Size: 1500, EventKey: "evt_refused", Type: "charge.refunded"})
	require.NoError(t, store.AppendRequests(ctx0, entries, dedupe.RequestLogBounds{Size: 1000, Age: time.Hour}))

	h, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd},
		Providers: []string{"paddle", "stripe"}, Requests: store})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	console := srv.URL
	ctx := browser(t, bin, 1400, 900)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900), chromedp.Navigate(console+"/requests")))
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
	require.NoError(t, err)
	require.True(t, wide, "the log fits 1400 pixels without scrolling sideways")
	count := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.requests tbody tr").length`))
		require.NoError(t, err)
		return n
	}
	require.Equal(t, len(entries), count())
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("table.requests tbody tr").innerText`))
	require.NoError(t, err)
	require.Contains(t, first, "core rejected", "the newest first, the core's rejection named as such")
	if os.Getenv("WEBHOOKD_UPDATE_SCREENSHOT") == "1" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "requests.png"), png, 0o644))
	}

	// Filter as a person does: pick in the selects, submit.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#outcome").value = "unauthorized",
		document.querySelector("#reason").value = "signature_invalid", document.querySelector("#filter").click(), true`))
	require.NoError(t, err)
	// The click navigates: polled from here, as a wait inside the page
	// would not survive it.
	for deadline := time.Now().Add(20 * time.Second); ; {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && location.search.includes("reason=signature_invalid")`))
		if err == nil && ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "the filter did not load: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, 6, count())
	reasons, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("table.requests tbody tr td:nth-child(4)")).map(e => e.innerText)`))
	require.NoError(t, err)
	for _, r := range reasons {
		require.Equal(t, "signature_invalid", r)
	}

	// A verified entry links to its record.
	_, err = chromedp.Run(ctx, chromedp.Navigate(console+"/requests?outcome=forwarded"))
	require.NoError(t, err)
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("table.requests tbody a").getAttribute("href")`))
	require.NoError(t, err)
	require.Equal(t, "/records/stripe:evt_ok", href)
	_, err = chromedp.Run(ctx, chromedp.Navigate(console+href))
	require.NoError(t, err)
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("h1").innerText`))
	require.NoError(t, err)
	require.Contains(t, title, "evt_ok")
}
