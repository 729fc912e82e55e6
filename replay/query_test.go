package replay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// querySigner signs as a gateway that signs a query value (Mercado Pago's
// data.id): Sign's query must reach the receiver.
type querySigner struct{}

func (querySigner) Sign(body []byte) (providers.Delivery, error) {
	return providers.Delivery{Header: http.Header{"X-Signature": {"sig"}}, Query: url.Values{"data.id": {"A1"}}, Body: body}, nil
}

func TestRunSendsTheSignedQuery(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + "?" + r.URL.RawQuery
	}))
	t.Cleanup(srv.Close)
	rep, err := Run(context.Background(), []Fixture{{Path: "gw/a.json", Provider: "gw", Body: []byte(`{}`)}},
		Options{URL: srv.URL, Signers: map[string]providers.Signer{"gw": querySigner{}}, Repeat: 1, Concurrency: 1, Timeout: DefaultTimeout})
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Equal(t, "/webhooks/gw?data.id=A1", <-got)
}
