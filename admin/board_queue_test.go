package admin_test

import (
	"context"
	"encoding/json"
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

// TestBoardShowsEachDestination: a source's row has each destination's
// share delivered and, for a queue destination, the store's depth and
// oldest, in /api/summary and on the board alike.
func TestBoardShowsEachDestination(t *testing.T) {
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	for _, event := range []string{"evt_1", "evt_2"} {
		_, err := store.Enqueue(context.Background(), dedupe.Enqueue{Key: dedupe.Key{Source: "stripe-eu", Event: event, Destination: "ledger"}.String(),
			Fingerprint: "fp", MaxAge: time.Hour, Request: stripeRequest(event)})
		require.NoError(t, err)
	}
	fwd, err := dispatch.New(dispatch.Options{URL: "http://127.0.0.1:1", Timeout: time.Second})
	require.NoError(t, err)
	sources := []string{"stripe-eu", "xendit"}
	rec := overview.NewRecorder(sources, nil)
	for _, o := range []receiver.Outcome{receiver.OutcomeForwarded, receiver.OutcomeForwarded, receiver.OutcomeForwarded, receiver.OutcomeUnavailable} {
		rec.Observe(receiver.Delivery{Provider: "stripe", Source: "stripe-eu", Destination: "billing", Outcome: o})
	}
	rec.Observe(receiver.Delivery{Provider: "stripe", Source: "stripe-eu", Destination: "ledger", Outcome: receiver.OutcomeQueued})
	h, err := admin.New(admin.Config{Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd},
		Providers: sources, Overview: rec, Queue: store,
		Destinations: func() []admin.Destination {
			return []admin.Destination{
				{Name: "billing", Delivery: "sync", Sources: []string{"stripe-eu", "xendit"}},
				{Name: "ledger", Delivery: "queue", MaxAge: time.Hour, Sources: []string{"stripe-eu"}},
			}
		}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		return b
	}

	var sum overview.Summary
	require.NoError(t, json.Unmarshal(get("/api/summary"), &sum))
	require.Equal(t, "stripe-eu", sum.Providers[0].Source)
	dests := sum.Providers[0].Destinations
	require.Len(t, dests, 2)
	require.Equal(t, "billing", dests[0].Destination)
	require.InDelta(t, 0.75, *dests[0].Delivered.Share, 1e-9)
	require.Nil(t, dests[0].Queue)
	require.Equal(t, "ledger", dests[1].Destination)
	require.Equal(t, uint64(1), dests[1].Queued)
	require.NotNil(t, dests[1].Queue)
	require.Equal(t, 2, dests[1].Queue.Depth)
	require.NotNil(t, dests[1].Queue.Oldest)
	require.Empty(t, sum.Providers[1].Destinations, "xendit: no traffic, no queue")

	page := string(get("/overview"))
	for _, want := range []string{
		`<span data-destination="billing"><a href="/?provider=stripe-eu&amp;destination=billing"><code>billing</code></a> <span title="3 of 4 reached it" data-figure="delivered">75.0%</span></span>`,
		`data-figure="queue">2 queued, oldest 0s</span>`,
	} {
		require.Contains(t, page, want)
	}
}
