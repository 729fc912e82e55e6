package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/redrive"
)

type queueFixture struct {
	store *lmdb.Store
	srv   *httptest.Server
}

func newQueueFixture(t *testing.T) *queueFixture {
	t.Helper()
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	fwd, err := dispatch.New(dispatch.Options{URL: "http://127.0.0.1:1", Timeout: time.Second})
	require.NoError(t, err)
	h, err := admin.New(admin.Config{
		Store: store, Redriver: &redrive.Redriver{Store: store, Forwarder: fwd}, Queue: store,
		Destinations: func() []admin.Destination {
			return []admin.Destination{
				{Name: "billing", URL: "https://billing.internal/hook", Delivery: "sync"},
				{Name: "ledger", URL: "https://ledger.internal/events", Delivery: "queue", MaxAge: time.Hour},
			}
		},
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &queueFixture{store: store, srv: srv}
}

func (f *queueFixture) call(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(b, out), string(b))
	}
	return resp.StatusCode
}

func (f *queueFixture) enqueue(t *testing.T, event string) string {
	t.Helper()
	key := dedupe.Key{Source: "stripe-eu", Event: event, Destination: "ledger"}.String()
	_, err := f.store.Enqueue(context.Background(), dedupe.Enqueue{Key: key, Fingerprint: "fp", MaxAge: time.Hour,
		Request: stripeRequest(event)})
	require.NoError(t, err)
	return key
}

type destinationsAnswer struct {
	Destinations []struct {
		Name, URL, Delivery string
		Paused              bool
		Queued              int
		OldestQueuedAt      *time.Time `json:"oldest_queued_at"`
	}
}

func TestDestinationsListPauseResume(t *testing.T) {
	f := newQueueFixture(t)
	var got destinationsAnswer
	require.Equal(t, http.StatusOK, f.call(t, "GET", "/api/destinations", "", &got))
	require.Len(t, got.Destinations, 2)
	require.Equal(t, "queue", got.Destinations[1].Delivery)
	require.Zero(t, got.Destinations[1].Queued)
	require.Nil(t, got.Destinations[1].OldestQueuedAt, "null when none waits")

	f.enqueue(t, "evt_1")
	f.enqueue(t, "evt_2")
	require.Equal(t, http.StatusOK, f.call(t, "GET", "/api/destinations", "", &got))
	require.Equal(t, 2, got.Destinations[1].Queued)
	require.NotNil(t, got.Destinations[1].OldestQueuedAt)

	var one struct {
		Name   string
		Paused bool
	}
	require.Equal(t, http.StatusOK, f.call(t, "POST", "/api/destinations/ledger/pause", "", &one))
	require.Equal(t, "ledger", one.Name)
	require.True(t, one.Paused)
	p, err := f.store.Paused(context.Background())
	require.NoError(t, err)
	require.True(t, p["ledger"].Paused, "the flag is in the store")
	require.Equal(t, http.StatusOK, f.call(t, "POST", "/api/destinations/ledger/resume", "", &one))
	require.False(t, one.Paused)
	require.Equal(t, http.StatusNotFound, f.call(t, "POST", "/api/destinations/nowhere/pause", "", nil))
}

func TestRedriveByFilterRequeues(t *testing.T) {
	f := newQueueFixture(t)
	ctx := context.Background()
	failed := f.enqueue(t, "evt_1")
	f.enqueue(t, "evt_2")
	a, err := f.store.Take(ctx, "ledger", 1)
	require.NoError(t, err)
	require.Equal(t, failed, a[0].Lease.Key)
	require.NoError(t, f.store.FailAttempt(ctx, a[0].Lease, dedupe.Response{Status: 503}, "max_age passed"))

	var sum struct{ Matched, Redriven int }
	require.Equal(t, http.StatusOK, f.call(t, "POST", "/api/redrive", `{"destination":"ledger","type":"charge.*","since":"1h"}`, &sum))
	require.Equal(t, 1, sum.Matched)
	require.Equal(t, 1, sum.Redriven)
	rec, err := f.store.Get(ctx, failed)
	require.NoError(t, err)
	require.Equal(t, dedupe.Queued, rec.State, "a queue destination's record is requeued, not forwarded")

	require.Equal(t, http.StatusOK, f.call(t, "POST", "/api/redrive", `{"destination":"ledger"}`, &sum))
	require.Equal(t, 0, sum.Matched, "nothing FAILED is left")
	require.Equal(t, http.StatusOK, f.call(t, "POST", "/api/redrive", `{"destination":"ledger","type":"invoice.*"}`, &sum))
	require.Zero(t, sum.Matched)
	for _, bad := range []string{`{"state":"LOST"}`, `{"since":"yesterday"}`, `{"type":"["}`, `{"colour":"red"}`, `not json`} {
		require.Equal(t, http.StatusBadRequest, f.call(t, "POST", "/api/redrive", bad, nil), bad)
	}
}

func TestConsoleDestinationsPage(t *testing.T) {
	f := newQueueFixture(t)
	f.enqueue(t, "evt_1")
	page := func() string {
		resp, err := http.Get(f.srv.URL + "/destinations")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	html := page()
	require.Contains(t, html, `id="destination-ledger"`)
	require.Regexp(t, `data-figure="queued">1<`, html)
	require.Contains(t, html, `action="/destinations/ledger/pause"`)

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(f.srv.URL+"/destinations/ledger/pause", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/destinations?done=paused", resp.Header.Get("Location"))
	html = page()
	require.Contains(t, html, "<strong>paused</strong>")
	require.Contains(t, html, `action="/destinations/ledger/resume"`)
	resp, err = client.PostForm(f.srv.URL+"/destinations/nowhere/pause", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "/destinations?done=notfound", resp.Header.Get("Location"))
}

// A queue destination's record redriven by key goes back to its queue,
// not through a forward from the request.
func TestRedriveOfAQueuedRecordRequeues(t *testing.T) {
	f := newQueueFixture(t)
	ctx := context.Background()
	key := f.enqueue(t, "evt_1")
	a, err := f.store.Take(ctx, "ledger", 1)
	require.NoError(t, err)
	require.NoError(t, f.store.FailAttempt(ctx, a[0].Lease, dedupe.Response{Status: 503}, "max_age passed"))
	var rec struct{ State string }
	require.Equal(t, http.StatusOK, f.call(t, "POST", "/api/records/"+url.PathEscape(key)+"/redrive", "", &rec))
	require.Equal(t, "QUEUED", rec.State)
	require.Equal(t, http.StatusConflict, f.call(t, "POST", "/api/records/"+url.PathEscape(key)+"/redrive", "", nil), "queued already")
}

func TestDestinationsListShowsTheQueueOfARemovedDestination(t *testing.T) {
	f := newQueueFixture(t)
	f.enqueue(t, "evt_1")
	// A reload removed "refunds" while two events waited in its queue.
	for _, event := range []string{"evt_2", "evt_3"} {
		key := dedupe.Key{Source: "stripe-eu", Event: event, Destination: "refunds"}.String()
		_, err := f.store.Enqueue(context.Background(), dedupe.Enqueue{Key: key, Fingerprint: "fp", MaxAge: time.Hour, Request: stripeRequest(event)})
		require.NoError(t, err)
	}
	var got struct {
		Destinations []struct {
			Name, Delivery string
			Queued         int
			OldestQueuedAt *time.Time `json:"oldest_queued_at"`
			Removed        bool
		}
	}
	require.Equal(t, http.StatusOK, f.call(t, "GET", "/api/destinations", "", &got))
	require.Len(t, got.Destinations, 3)
	ledger, refunds := got.Destinations[1], got.Destinations[2]
	require.Equal(t, "ledger", ledger.Name)
	require.False(t, ledger.Removed, "in the configuration")
	require.Equal(t, 1, ledger.Queued)
	require.Equal(t, "refunds", refunds.Name)
	require.True(t, refunds.Removed)
	require.Equal(t, "queue", refunds.Delivery)
	require.Equal(t, 2, refunds.Queued)
	require.NotNil(t, refunds.OldestQueuedAt)
	require.Equal(t, http.StatusNotFound, f.call(t, "POST", "/api/destinations/refunds/pause", "", nil),
		"nothing in force to pause")
}

func TestConsoleListFiltersByDestination(t *testing.T) {
	f := newQueueFixture(t)
	f.enqueue(t, "evt_1")
	billing := dedupe.Key{Source: "stripe-eu", Event: "evt_2", Destination: "billing"}.String()
	_, _, err := f.store.Claim(context.Background(), billing, "fp", stripeRequest("evt_2"))
	require.NoError(t, err)
	page := func(path string) string {
		t.Helper()
		resp, err := http.Get(f.srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		return string(b)
	}
	for _, tc := range []struct {
		path, selected string
		want, not      []string
	}{
		{"/", "", []string{"evt_1", "evt_2"}, nil},
		{"/?destination=ledger", "ledger", []string{"evt_1"}, []string{"evt_2"}},
		{"/?destination=billing&provider=stripe-eu", "billing", []string{"evt_2"}, []string{"evt_1"}},
		{"/?destination=refunds", "refunds", nil, []string{"evt_1", "evt_2"}}, // not configured: still a filter
		{"/?destination=ledger&state=QUEUED", "ledger", []string{"evt_1", `<option value="QUEUED" selected>`}, []string{"evt_2"}},
	} {
		body := page(tc.path)
		require.Contains(t, body, `<select name="destination" id="destination">`, tc.path)
		for _, w := range tc.want {
			require.Contains(t, body, w, tc.path)
		}
		for _, n := range tc.not {
			require.NotContains(t, body, n, tc.path)
		}
		if tc.selected != "" {
			require.Contains(t, body, `<option value="`+tc.selected+`" selected>`, tc.path)
		}
	}
}
