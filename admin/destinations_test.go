package admin_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// TestRecordsOfSeveralDestinations: each (event, destination) is a record
// of its own; the API shows source and destination, filters by them, and
// a record's routes take ?destination=, required when the event went to
// more than one.
func TestRecordsOfSeveralDestinations(t *testing.T) {
	f := newFixture(t, "tok")
	f.seed(t, "stripe-eu:evt_1\x1fbilling", dedupe.Completed, stripeRequest("evt_1"))
	f.seed(t, "stripe-eu:evt_1\x1fledger", dedupe.Failed, stripeRequest("evt_1"))
	f.seed(t, "stripe-eu:evt_2\x1fledger", dedupe.Completed, stripeRequest("evt_2"))
	f.seed(t, "stripe:evt_3", dedupe.Completed, stripeRequest("evt_3"))

	type view struct {
		Key, Source, Destination, Provider, State string
	}
	list := func(query string) []view {
		resp, body := f.do(t, "GET", "/api/records"+query, true, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		var out struct{ Records []view }
		require.NoError(t, json.Unmarshal([]byte(body), &out))
		return out.Records
	}
	all := list("")
	require.Len(t, all, 4)
	byDest := map[string]view{}
	for _, v := range all {
		byDest[v.Key+" "+v.Destination] = v
	}
	require.Equal(t, view{Key: "stripe-eu:evt_1", Source: "stripe-eu", Destination: "ledger", Provider: "stripe-eu", State: "FAILED"},
		byDest["stripe-eu:evt_1 ledger"], "key is the Idempotency-Key; provider is the source's without ProviderOf")
	require.Equal(t, "default", byDest["stripe:evt_3 default"].Destination)

	require.Len(t, list("?destination=ledger"), 2)
	require.Len(t, list("?source=stripe-eu&destination=billing"), 1)
	require.Len(t, list("?source=stripe"), 1)
	require.Len(t, list("?destination=default"), 1)
	resp, _ := f.do(t, "GET", "/api/records?source=a:b", true, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	resp, body := f.do(t, "GET", "/api/records/stripe-eu:evt_1", true, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "billing, ledger", "the 400 names them")
	resp, body = f.do(t, "GET", "/api/records/stripe-eu:evt_1?destination=ledger", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"state":"FAILED"`)
	resp, body = f.do(t, "GET", "/api/records/stripe-eu:evt_2", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "one destination: no need to name it: %s", body)
	resp, _ = f.do(t, "GET", "/api/records/stripe-eu:evt_1?destination=nowhere", true, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, body = f.do(t, "GET", "/", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<span class="destination">ledger</span>`, "the console shows the destination")
	require.Contains(t, body, `<span class="source">stripe-eu</span>`)
	resp, body = f.do(t, "GET", "/records/stripe-eu:evt_1?destination=ledger", true, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "<dt>Destination</dt><dd>ledger</dd>")

	resp, body = f.do(t, "DELETE", "/api/records/stripe-eu:evt_1", true, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	resp, body = f.do(t, "DELETE", "/api/records/stripe-eu:evt_1?destination=billing", true, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	resp, body = f.do(t, "POST", "/api/records/stripe-eu:evt_1/redrive", true, nil)
	require.NotEqual(t, http.StatusBadRequest, resp.StatusCode, "one record left: %s", body)
}
