package receiver_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

type captured struct {
	provider, key string
	body          []byte
}

// TestCaptureSeesOnlyVerifiedDeliveries: the Capture hook gets every
// delivery whose signature and event check out, duplicates included, and
// nothing else.
func TestCaptureSeesOnlyVerifiedDeliveries(t *testing.T) {
	var (
		mu  sync.Mutex
		got []captured
	)
	store, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(ad))
	down := newDownstream(t)
	fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	handler, err := receiver.New(receiver.Config{
		Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 4096,
		Capture: func(provider, key string, body []byte) {
			mu.Lock()
			got = append(got, captured{provider, key, bytes.Clone(body)})
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)

	post := func(body []byte, sig string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/stripe", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Stripe-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	good := event("evt_cap", 1)
	require.Equal(t, http.StatusUnauthorized, post(good, "t=1,v1=00"))
	require.Equal(t, http.StatusUnauthorized, post(good, stripeSignature(t, "whsec_other", time.Now(), good)))
	require.Equal(t, http.StatusBadRequest, post([]byte(`not json`), sign(t, []byte(`not json`))))
	require.Empty(t, got, "nothing unverified or unparsable is captured")

	require.Equal(t, http.StatusCreated, post(good, sign(t, good)))
	require.Equal(t, http.StatusCreated, post(good, sign(t, good)), "replayed duplicate")
	require.Equal(t, []captured{{"stripe", "evt_cap", good}, {"stripe", "evt_cap", good}}, got)
	require.EqualValues(t, 1, down.calls.Load())
}
