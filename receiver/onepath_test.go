package receiver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/webhookd/webhookd/providers"
)

// Tests of the one path every delivery takes through the receiver: Verify
// gets the request's context, and a single event and a batch's items are
// claimed, forwarded and answered by the same code.

// requestBound verifies only with the request's own context.
type requestBound struct{}

func (requestBound) Name() string { return "bound" }

func (requestBound) Parse(d providers.Delivery) ([]providers.Item, error) {
	return []providers.Item{{Event: providers.Event{Key: "k1", Fingerprint: "f"}, Body: d.Body}}, nil
}

func (requestBound) Ack() *providers.Acknowledgement { return nil }

func (requestBound) Sign([]byte) (providers.Delivery, error) {
	return providers.Delivery{}, providers.ErrCannotSign
}

func (requestBound) Verify(ctx context.Context, _ providers.Delivery) error {
	if ctx.Value(http.ServerContextKey) == nil {
		return providers.ErrUnauthorized
	}
	return nil
}

// TestVerifyGetsTheRequestContext: the receiver verifies with the
// request's context (so a fetch ends when the request does).
func TestVerifyGetsTheRequestContext(t *testing.T) {
	h := newHarness(t, withProviders(requestBound{}))
	r := h.sendAs("bound", []byte(`{}`), http.Header{"Content-Type": {"application/json"}})
	require.Equal(t, http.StatusCreated, r.status, r.body)
}

// queryKeyed keys each delivery on its URL query's id, as a gateway that
// signs a query value would.
type queryKeyed struct{ requestBound }

func (queryKeyed) Name() string { return "query" }

func (queryKeyed) Parse(d providers.Delivery) ([]providers.Item, error) {
	return []providers.Item{{Event: providers.Event{Key: d.Query.Get("id"), Fingerprint: "f"}, Body: d.Body}}, nil
}

// twoEvents answers every request with two items but no acknowledgement.
type twoEvents struct{ requestBound }

func (twoEvents) Name() string { return "two" }

func (twoEvents) Parse(d providers.Delivery) ([]providers.Item, error) {
	it := providers.Item{Event: providers.Event{Key: "k1", Fingerprint: "f"}, Body: d.Body}
	other := it
	other.Key = "k2"
	return []providers.Item{it, other}, nil
}

// TestOnePath: the adapter is given the request's query; a provider
// without an acknowledgement, whose answer is the core's, cannot carry
// several events in one request: 400, nothing forwarded.
func TestOnePath(t *testing.T) {
	h := newHarness(t, withProviders(queryKeyed{}, twoEvents{}))
	send := func(path string) reply {
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+path, strings.NewReader(`{}`))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return reply{resp.StatusCode, resp.Header, string(b)}
	}
	require.Equal(t, http.StatusCreated, send("query?id=evt_q1").status)
	require.Equal(t, http.StatusBadRequest, send("query").status, "no id in the query, no key")
	r := send("two")
	require.Equal(t, http.StatusBadRequest, r.status, r.body)
	require.EqualValues(t, 1, h.down.calls.Load())
	require.Zero(t, h.state("two:k1"))
}

// itemCount is a verified provider whose Parse returns n items, and whose
// Ack is ack.
type itemCount struct {
	n   int
	ack *providers.Acknowledgement
}

func (p itemCount) Name() string { return "count" }

func (p itemCount) Parse(d providers.Delivery) ([]providers.Item, error) {
	items := make([]providers.Item, p.n)
	for i := range items {
		items[i] = providers.Item{Event: providers.Event{Key: fmt.Sprintf("k%d", i), Fingerprint: "f"}, Body: d.Body}
	}
	return items, nil
}

func (p itemCount) Ack() *providers.Acknowledgement { return p.ack }

func (itemCount) Sign([]byte) (providers.Delivery, error) {
	return providers.Delivery{}, providers.ErrCannotSign
}

func (itemCount) Verify(context.Context, providers.Delivery) error { return nil }

// TestItemCountOfTheOnePath: a provider without an acknowledgement must
// give exactly one item, and a batch provider at least one; otherwise the
// request is 400 and nothing is claimed or forwarded (a batch of none is
// never acknowledged).
func TestItemCountOfTheOnePath(t *testing.T) {
	ack := &providers.Acknowledgement{Status: http.StatusOK, Body: []byte("ok")}
	tests := []struct {
		name string
		p    itemCount
		want int
	}{
		{"single, none", itemCount{0, nil}, http.StatusBadRequest},
		{"single, two", itemCount{2, nil}, http.StatusBadRequest},
		{"batch, none", itemCount{0, ack}, http.StatusBadRequest},
		{"single, one", itemCount{1, nil}, http.StatusCreated},
		{"batch, two", itemCount{2, ack}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withProviders(tt.p))
			r := h.sendAs("count", []byte(`{}`), http.Header{"Content-Type": {"application/json"}})
			require.Equal(t, tt.want, r.status, r.body)
			if tt.want == http.StatusBadRequest {
				require.Zero(t, h.down.calls.Load())
				require.Empty(t, h.records())
			}
		})
	}
}
