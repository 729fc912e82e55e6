package receiver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
	"github.com/webhookd/webhookd/dedupe/tiered"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

// pgSchema returns the test database and a fresh schema in it, dropped when
// the test ends; without WEBHOOKD_TEST_POSTGRES_DSN it skips the test, or
// fails it under CI=true (pgtest.DSN).
func pgSchema(t *testing.T) (dsn, schema string) {
	dsn = pgtest.DSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "webhookd_e2e_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop test schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		require.NoError(t, err)
	})
	return dsn, schema
}

// openPG opens one node's connection pool on the shared schema.
func openPG(t *testing.T, dsn, schema string) *postgres.Store {
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{
		Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, Schema: schema, OpTimeout: 2 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// node serves a receiver ("a webhookd node") on store, forwarding to down.
func node(t *testing.T, store receiver.Store, down string) *httptest.Server {
	ad, err := spec.NewBuiltin("stripe", []string{secret}, nil, nil)
	require.NoError(t, err)
	var reg providers.Registry
	require.NoError(t, reg.Register(ad))
	fwd, err := dispatch.New(dispatch.Options{URL: down, Timeout: 2 * time.Second, Retries: 1,
		RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 20 * time.Millisecond})
	require.NoError(t, err)
	handler, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 4096})
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

func postTo(t *testing.T, srv *httptest.Server, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/stripe", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", sign(t, body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// Two nodes share one Postgres store; a storm of one event split between
// them reaches the core service once.
func TestTwoNodesOnPostgresForwardOnce(t *testing.T) {
	dsn, schema := pgSchema(t)
	down := newDownstream(t)
	down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond) // keep the first forward in flight
		w.WriteHeader(http.StatusOK)
	})
	nodes := []*httptest.Server{node(t, openPG(t, dsn, schema), down.URL), node(t, openPG(t, dsn, schema), down.URL)}
	body := event("evt_two_nodes", 1)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	counts := map[int]int{}
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := postTo(t, nodes[i%2], body)
			mu.Lock()
			counts[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, down.calls.Load())
	require.Equal(t, 50, counts[200]+counts[409], "%v", counts)
	require.GreaterOrEqual(t, counts[200], 1)
	// Afterwards either node replays it.
	for _, n := range nodes {
		require.Equal(t, http.StatusOK, postTo(t, n, body))
	}
	require.EqualValues(t, 1, down.calls.Load())
}

// A tiered node replays a finished event from its LMDB while Postgres is
// unreachable; a new event, which only Postgres may claim, gets 503.
func TestTieredReplaysLocallyWithoutPostgres(t *testing.T) {
	dsn, schema := pgSchema(t)
	down := newDownstream(t)
	local, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{Lease: time.Minute, PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	shared := openPG(t, dsn, schema)
	tiered := tiered.New(local, shared)
	t.Cleanup(func() { tiered.Close() })
	// Another node finished an event before; this node has no copy of it.
	other := node(t, openPG(t, dsn, schema), down.URL)
	before := event("evt_elsewhere", 3)
	require.Equal(t, http.StatusCreated, postTo(t, other, before))

	srv := node(t, tiered, down.URL)
	done := event("evt_done", 1)
	require.Equal(t, http.StatusCreated, postTo(t, srv, done))
	require.Equal(t, http.StatusCreated, postTo(t, srv, before), "replayed from Postgres, and copied")
	require.EqualValues(t, 2, down.calls.Load())

	shared.Close() // Postgres is gone for this node (a hung server: dedupe's outage test)
	require.ErrorIs(t, tiered.Ping(context.Background()), dedupe.ErrClosed, "readiness reports the shared store gone")
	require.Equal(t, http.StatusCreated, postTo(t, srv, done), "replayed from the local copy")
	require.Equal(t, http.StatusCreated, postTo(t, srv, before), "replayed from the local copy")
	require.Equal(t, http.StatusServiceUnavailable, postTo(t, srv, event("evt_new", 2)))
	require.EqualValues(t, 2, down.calls.Load())
}
