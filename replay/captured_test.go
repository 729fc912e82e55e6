package replay

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

func TestLoadCapturedHeaders(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "paypal")
	writeFile(t, filepath.Join(dir, "a.json"), `{"id":"WH-1"}`)
	writeFile(t, filepath.Join(dir, "a.headers.json"), `{"Paypal-Transmission-Id":"tx-1","X-Many":["1","2"]}`)
	writeFile(t, filepath.Join(dir, "b.json"), `{"id":"WH-2"}`)

	fs, err := Load([]string{dir, filepath.Join(dir, "a.headers.json")}, "")
	require.NoError(t, err)
	require.Len(t, fs, 2, "a headers file is never a fixture, in a folder or named")
	require.Equal(t, "tx-1", fs[0].Header.Get("Paypal-Transmission-Id"))
	require.Equal(t, []string{"1", "2"}, fs[0].Header.Values("X-Many"))
	require.Nil(t, fs[1].Header)

	writeFile(t, filepath.Join(dir, "b.headers.json"), `{"X":1}`)
	_, err = Load([]string{dir}, "")
	require.ErrorContains(t, err, "not a string or a list of strings")
}

// formSigner signs like Duitku: the body unchanged, its own Content-Type.
type formSigner struct{}

func (formSigner) Sign(b []byte) (providers.Delivery, error) {
	return providers.Delivery{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: b}, nil
}

// headerCheck is an adapter that cannot sign and accepts a delivery only
// with its X-Captured header.
type headerCheck struct{}

func (headerCheck) Name() string { return "captured" }
func (headerCheck) Verify(_ context.Context, d providers.Delivery) error {
	if d.Header.Get("X-Captured") != "ok" {
		return providers.ErrUnauthorized
	}
	return nil
}
func (headerCheck) Parse(providers.Delivery) ([]providers.Item, error) { return nil, nil }

func TestRunSendsSignersContentTypeAndCapturedHeaders(t *testing.T) {
	var (
		mu  sync.Mutex
		got = map[string]http.Header{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	fixtures := []Fixture{
		{Path: "duitku/a.json", Provider: "duitku", Body: []byte("a=1")},
		{Path: "captured/ok.json", Provider: "captured", Body: []byte("{}"), Header: http.Header{"X-Captured": {"ok"}}},
		{Path: "captured/bad.json", Provider: "captured", Body: []byte("{}"), Header: http.Header{"X-Captured": {"no"}}},
	}
	rep, err := Run(context.Background(), fixtures, Options{
		URL:       srv.URL,
		Signers:   map[string]providers.Signer{"duitku": formSigner{}},
		Verifiers: map[string]providers.Provider{"captured": headerCheck{}},
	})
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Equal(t, 2, rep.Planned)
	require.Equal(t, "application/x-www-form-urlencoded", got["/webhooks/duitku"].Get("Content-Type"), "a signer's Content-Type stands")
	require.Equal(t, "ok", got["/webhooks/captured"].Get("X-Captured"), "captured headers are sent")
	require.Equal(t, "application/json", got["/webhooks/captured"].Get("Content-Type"))
	require.Contains(t, rep.Skipped[2], "do not verify with the local configuration")

	_, err = Run(context.Background(), []Fixture{{Path: "captured/none.json", Provider: "captured", Body: []byte("{}")}},
		Options{URL: srv.URL, Verifiers: map[string]providers.Provider{"captured": headerCheck{}}})
	require.ErrorContains(t, err, "no captured headers are beside it (captured/none.headers.json)")
}
