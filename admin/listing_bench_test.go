package admin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/redrive"
)

// BenchmarkListingRSS is issue 18's scenario: 150 stored 1 MiB requests,
// then four GET /api/records?limit=1000. It reports the process's RSS
// before and after the four listings, and the bytes each listing
// allocates. Run it once:
//
//	go test -run '^$' -bench BenchmarkListingRSS -benchtime 1x ./admin/
func BenchmarkListingRSS(b *testing.B) {
	ctx := context.Background()
	store, err := lmdb.Open(b.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(b, err)
	b.Cleanup(func() { store.Close() })
	body := bytes.Repeat([]byte("x"), dedupe.MaxStoredRequest)
	for i := range 150 {
		req := dedupe.NewRequest("application/json", "invoice.paid", body, true)
		l, _, err := store.Claim(ctx, fmt.Sprintf("stripe:evt_%03d", i), "fp", req)
		require.NoError(b, err)
		require.NoError(b, store.Complete(ctx, l, dedupe.Response{Status: 200}))
	}
	h, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store}, Providers: []string{"stripe"}})
	require.NoError(b, err)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	body = nil

	list := func() {
		resp, err := http.Get(srv.URL + "/api/records?limit=1000")
		require.NoError(b, err)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
		require.Greater(b, n, int64(150*50))
	}
	list() // connections and handlers warmed up
	for b.Loop() {
		runtime.GC()
		debug.FreeOSMemory()
		before := rssBytes(b)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range 4 {
			list()
		}
		runtime.ReadMemStats(&m1)
		after := rssBytes(b)
		b.ReportMetric(float64(before)/(1<<20), "MiB-RSS-before")
		b.ReportMetric(float64(after)/(1<<20), "MiB-RSS-after")
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/4/(1<<20), "MiB-alloc/listing")
	}
}

// rssBytes reads the process's resident set size (Linux).
func rssBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Skip("no VmRSS")
	return 0
}
