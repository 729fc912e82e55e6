package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// TestServeKeepsTheRequestLog runs serve on each store with a signed event,
// a forged one and an unknown route, stops it (which writes what waits in
// the log before the store closes), and reads the log back from the store
// as the next start would: every request, newest first, the forged one
// with its reason and without an event key; bounded by
// WEBHOOKD_REQUEST_LOG_SIZE.
func TestServeKeepsTheRequestLog(t *testing.T) {
	for _, store := range []string{"lmdb", "postgres"} {
		t.Run(store, func(t *testing.T) {
			var dsn string
			if store == "postgres" {
				dsn = pgtest.DSN(t) // before clearEnv, which unsets it
			}
			clearEnv(t)
			if store == "postgres" {
				t.Setenv("WEBHOOKD_STORE", "postgres")
				t.Setenv("WEBHOOKD_POSTGRES_DSN", dsn+"&search_path="+testPGSchema(t, dsn))
			}
			down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			defer down.Close()
			t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
			t.Setenv("WEBHOOKD_ADMIN_ADDR", "")
			t.Setenv("WEBHOOKD_DATA_DIR", filepath.Join(t.TempDir(), "data"))
			t.Setenv("WEBHOOKD_DOWNSTREAM_URL", down.URL)
			t.Setenv("WEBHOOKD_STRIPE_SECRETS", testSecret)
			t.Setenv("WEBHOOKD_REQUEST_LOG_SIZE", "3")
			cfg, err := loadConfig()
			require.NoError(t, err)
			require.Equal(t, 3, cfg.RequestLogSize)
			require.Equal(t, 24*time.Hour, cfg.RequestLogAge)
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan string, 1)
			done := make(chan error, 1)
			go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler), ready) }()
			base := "http://" + <-ready
			post := func(route string, body []byte, sig string) int {
				req, err := http.NewRequest(http.MethodPost, base+"/webhooks/"+route, bytes.NewReader(body))
				require.NoError(t, err)
				if sig != "" {
					req.Header.Set("Stripe-Signature", sig)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp.StatusCode
			}
			old := []byte(`{"id":"evt_pushed_out","object":"event","type":"invoice.paid"}`)
			require.Equal(t, http.StatusOK, post("stripe", old, stripeSignature(t, testSecret, time.Now(), old)))
			ok := []byte(`{"id":"evt_logged","object":"event","type":"invoice.paid"}`)
			require.Equal(t, http.StatusOK, post("stripe", ok, stripeSignature(t, testSecret, time.Now(), ok)))
			require.Equal(t, http.StatusUnauthorized, post("stripe", ok, "t=1,v1=00"))
			require.Equal(t, http.StatusNotFound, post("nosuch", ok, ""))
			cancel()
			require.NoError(t, <-done)

			s, err := openStore(context.Background(), cfg, storeOptions(cfg, slog.New(slog.DiscardHandler)), lmdb.Open)
			require.NoError(t, err)
			defer s.Close()
			entries, next, err := s.(dedupe.RequestLog).ListRequests(context.Background(), dedupe.RequestFilter{})
			require.NoError(t, err)
			require.Empty(t, next)
			require.Len(t, entries, 3, "bounded by WEBHOOKD_REQUEST_LOG_SIZE: the oldest is pushed out")
			require.Equal(t, "not_found", entries[0].Outcome)
			require.Equal(t, "unknown_source", entries[0].Reason)
			require.Equal(t, "nosuch", entries[0].Source)
			require.Equal(t, "unauthorized", entries[1].Outcome)
			require.Equal(t, "timestamp_outside_tolerance", entries[1].Reason)
			require.Empty(t, entries[1].EventKey, "never an unverified request's key")
			require.Equal(t, "forwarded", entries[2].Outcome)
			require.Equal(t, "evt_logged", entries[2].EventKey)
			require.Equal(t, int64(len(ok)), entries[2].Size)
			require.Contains(t, entries[2].RemoteAddr, "127.0.0.1:")
		})
	}
}
