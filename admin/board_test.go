package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/redrive"
)

// TestBoardLinksTheRequestLog: each board row links the request log of its
// source, and its refusals the entries of each reason; the row of unknown
// routes links the log's not_found entries, which keep the names asked for.
func TestBoardLinksTheRequestLog(t *testing.T) {
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	fwd, err := dispatch.New(dispatch.Options{URL: "http://127.0.0.1:1", Timeout: time.Second})
	require.NoError(t, err)
	rec := overview.NewRecorder([]string{"stripe"}, nil)
	rec.Observe(receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnauthorized, Reason: "signature_invalid"})
	rec.Observe(receiver.Delivery{Provider: "wp-login.php", Outcome: receiver.OutcomeNotFound, Reason: "unknown_source"})
	h, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd}, Providers: []string{"stripe"}, Overview: rec})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/overview")
	require.NoError(t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, href := range []string{
		`href="/requests?source=stripe"`,
		`href="/requests?source=stripe&amp;reason=signature_invalid"`,
		`href="/requests?outcome=not_found"`,
		`href="/requests?outcome=not_found&amp;reason=unknown_source"`,
	} {
		require.Contains(t, string(page), href)
	}
	require.NotContains(t, string(page), "wp-login", "no label from a request")
}
