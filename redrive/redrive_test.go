package redrive_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	"github.com/webhookd/webhookd/redrive"
	"github.com/webhookd/webhookd/webhookverify"
)

const (
	stripeSecret     = "whsec_redrive_test_secret"
	downstreamSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

// stores opens each backend: lmdb always, postgres and tiered when the
// test database is configured (pgtest skips them otherwise).
var stores = map[string]func(t *testing.T) dedupe.Store{
	"lmdb": func(t *testing.T) dedupe.Store {
		return openLMDB(t)
	},
	"postgres": func(t *testing.T) dedupe.Store {
		return openPG(t)
	},
	"tiered": func(t *testing.T) dedupe.Store {
		return tiered.New(openLMDB(t), openPG(t))
	},
}

func openLMDB(t *testing.T) *lmdb.Store {
	s, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func openPG(t *testing.T) *postgres.Store {
	dsn := pgtest.DSN(t)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Options: dedupe.Options{PruneInterval: -1}, Schema: pgtest.Schema(t, dsn)})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// core is the core service: it answers status and keeps what it got.
type core struct {
	status atomic.Int32
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
}

func (c *core) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.got, c.bodies = append(c.got, r), append(c.bodies, b)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(c.status.Load()))
	_, _ = w.Write([]byte(`{"answer":1}`))
}

// Redrive end to end on each store: a delivery the core rejects is
// FAILED; once the core is fixed, the redrive forwards the same request
// (body, Idempotency-Key, headers, signed as the first time) and records
// the core's answer, which the provider's next retry is replayed.
func TestRedriveEndToEnd(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			c := &core{}
			c.status.Store(http.StatusUnprocessableEntity)
			down := httptest.NewServer(c)
			t.Cleanup(down.Close)
			fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: 2 * time.Second, SigningSecrets: []string{downstreamSecret}})
			require.NoError(t, err)
			sa, err := spec.NewBuiltin("stripe", []string{stripeSecret}, nil, nil)
			require.NoError(t, err)
			var reg providers.Registry
			require.NoError(t, reg.Register(sa))
			h, err := receiver.New(receiver.Config{Providers: &reg, Store: store, Forwarder: fwd, MaxBodyBytes: 1 << 20, StoreRequests: true})
			require.NoError(t, err)
			recv := httptest.NewServer(h)
			t.Cleanup(recv.Close)

			event := []byte(`{"id":"evt_redrive_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`)
			deliver := func() *http.Response {
				signed, err := sa.Sign(event)
				body, hdr := signed.Body, signed.Header
				require.NoError(t, err)
				req, err := http.NewRequest(http.MethodPost, recv.URL+"/webhooks/stripe", bytes.NewReader(body))
				require.NoError(t, err)
				req.Header = hdr
				req.Header.Set("Content-Type", "application/json; charset=utf-8")
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp
			}
			require.Equal(t, http.StatusUnprocessableEntity, deliver().StatusCode)
			rec, err := store.Get(context.Background(), "stripe:evt_redrive_1")
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, rec.State)
			require.True(t, rec.Request.Stored(), "the request is kept with the claim")

			c.status.Store(http.StatusOK)
			rd := &redrive.Redriver{Store: store, Forwarder: fwd}
			res, err := rd.Redrive(context.Background(), "stripe:evt_redrive_1")
			require.NoError(t, err)
			require.True(t, res.Delivered())
			require.Equal(t, dedupe.Completed, res.Record.State)
			require.Equal(t, uint32(2), res.Record.Attempts)
			require.Equal(t, http.StatusOK, res.Record.Response.Status)

			c.mu.Lock()
			require.Len(t, c.got, 2)
			first, again := c.got[0], c.got[1]
			require.Equal(t, c.bodies[0], c.bodies[1], "the same body, byte for byte")
			require.Equal(t, event, c.bodies[1])
			c.mu.Unlock()
			for _, name := range []string{"Idempotency-Key", "Content-Type", "Webhook-Provider", "Webhook-Event-Id", "Webhook-Event-Type", "Webhook-Id"} {
				require.Equal(t, first.Header.Get(name), again.Header.Get(name), name)
				require.NotEmpty(t, again.Header.Get(name), name)
			}
			require.NoError(t, webhookverify.Verify(downstreamSecret, again.Header, event, time.Minute), "signed as every forward is")

			resp := deliver()
			require.Equal(t, http.StatusOK, resp.StatusCode, "the provider's retry replays the redrive's answer")
			require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
			// An operator may redrive it again, delivered as it is: the
			// core receives it with the same Idempotency-Key. A redrive
			// the core does not answer leaves it COMPLETED with its answer.
			c.status.Store(http.StatusServiceUnavailable)
			res, err = rd.Redrive(context.Background(), "stripe:evt_redrive_1")
			require.ErrorIs(t, err, redrive.ErrNotDelivered)
			require.Equal(t, dedupe.Completed, res.Record.State)
			require.Equal(t, http.StatusOK, res.Record.Response.Status)
			c.status.Store(http.StatusOK)
			res, err = rd.Redrive(context.Background(), "stripe:evt_redrive_1")
			require.NoError(t, err)
			require.True(t, res.Delivered())
			require.Equal(t, dedupe.Completed, res.Record.State)
			require.Equal(t, uint32(3), res.Record.Attempts, "the redrive the core did not answer is not counted")
			c.mu.Lock()
			require.Equal(t, "stripe:evt_redrive_1", c.got[len(c.got)-1].Header.Get("Idempotency-Key"))
			c.mu.Unlock()
		})
	}
}

// A redrive the core does not answer leaves the record as it was: FAILED,
// its answer replayed, ready for the next redrive.
func TestRedriveUnavailableRestoresTheRecord(t *testing.T) {
	store := openLMDB(t)
	c := &core{}
	c.status.Store(http.StatusServiceUnavailable)
	down := httptest.NewServer(c)
	t.Cleanup(down.Close)
	fwd, err := dispatch.New(dispatch.Options{URL: down.URL, Timeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	req := dedupe.NewRequest("application/json", "t", []byte(`{"id":"x"}`), true)
	rejected := dedupe.Response{Status: 422, ContentType: "text/plain", Body: []byte("no")}
	l, _, err := store.Claim(ctx, "stripe:x", "fp", req)
	require.NoError(t, err)
	require.NoError(t, store.Fail(ctx, l, rejected))

	before, err := store.Get(ctx, "stripe:x")
	require.NoError(t, err)

	rd := &redrive.Redriver{Store: store, Forwarder: fwd}
	time.Sleep(time.Millisecond) // a write now would show in updated_at
	res, err := rd.Redrive(ctx, "stripe:x")
	require.ErrorIs(t, err, redrive.ErrNotDelivered)
	require.Equal(t, before, res.Record, "unchanged: state, answer, request, attempts, updated and expiry times")
	after, err := store.Get(ctx, "stripe:x")
	require.NoError(t, err)
	require.Equal(t, before, after)

	// An abandoned claim is released instead: it has no answer to keep.
	shortLease, err := lmdb.Open(t.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1, Lease: time.Millisecond}, NoSync: true})
	require.NoError(t, err)
	defer shortLease.Close()
	_, _, err = shortLease.Claim(ctx, "stripe:y", "fp", req)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	_, err = (&redrive.Redriver{Store: shortLease, Forwarder: fwd}).Redrive(ctx, "stripe:y")
	require.ErrorIs(t, err, redrive.ErrNotDelivered)
	_, err = shortLease.Get(ctx, "stripe:y")
	require.ErrorIs(t, err, dedupe.ErrNotFound, "released, so the provider's next retry is forwarded afresh")
}
