package tiered

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// queryCounter counts the statements a pool sends. Each is one round trip,
// but for the preparation the pool's statement cache adds the first time a
// connection runs a statement (that is traced apart, and not counted).
// The statements sent alone (not a writer's batch) are kept, in order.
type queryCounter struct {
	n   atomic.Int64
	mu  sync.Mutex
	sql []string
}

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.mu.Lock()
	c.sql = append(c.sql, d.SQL)
	c.mu.Unlock()
	return ctx
}

// statements runs fn and returns the statements it sent alone.
func (c *queryCounter) statements(fn func()) []string {
	c.mu.Lock()
	before := len(c.sql)
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sql[before:]...)
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a writer's batch (postgres/writer.go), one
// pipeline, as the one round trip it is.
func (c *queryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *queryCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// count runs fn and returns how many round trips (statements, or batches
// of them) it made.
func (c *queryCounter) count(fn func()) int64 {
	before := c.n.Load()
	fn()
	return c.n.Load() - before
}

// openTieredNode opens one node of a tiered deployment: its own LMDB, and
// its own pool on the shared schema, traced by qc when it is not nil.
func openTieredNode(t *testing.T, dsn, schema string, opts dedupe.Options, qc *queryCounter) *Store {
	popts := postgres.Options{Options: opts, Schema: schema}
	popts.PruneInterval = -1
	if qc != nil {
		popts.Tracer = qc
	}
	shared, err := postgres.Open(context.Background(), dsn, popts)
	require.NoError(t, err)
	t.Cleanup(func() { shared.Close() })
	return New(openTestLMDB(t, opts), shared)
}

// A delete, or a new answer recorded after it, takes effect on every node
// of a tiered deployment, not only on the node that ran `keys delete`: the
// other nodes' local copies are not replayed once the shared row is gone
// or has changed.
func TestTieredDeleteTakesEffectOnEveryNode(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	const fp = "fp"
	first := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"first":true}`)}
	second := dedupe.Response{Status: 422, ContentType: "application/json", Body: []byte(`{"second":true}`)}
	cases := []struct {
		name  string
		after func(t *testing.T, a, b *Store, key string)
	}{
		{"deleted on A: B claims afresh", func(t *testing.T, a, b *Store, key string) {
			require.NoError(t, a.Delete(ctx, key))
			l, rec, err := b.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Nil(t, rec, "B replayed its copy of a deleted record")
			require.NotZero(t, l.Token)
			_, _, err = a.Claim(ctx, key, fp, nil)
			require.ErrorIs(t, err, dedupe.ErrInFlight, "B's claim is the shared one")
		}},
		{"force-deleted on A: B claims afresh", func(t *testing.T, a, b *Store, key string) {
			require.NoError(t, a.ForceDelete(ctx, key))
			_, rec, err := b.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Nil(t, rec, "B replayed its copy of a deleted record")
		}},
		{"deleted and recorded anew on A: B replays the new answer", func(t *testing.T, a, b *Store, key string) {
			require.NoError(t, a.Delete(ctx, key))
			l, rec, err := a.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Nil(t, rec)
			require.NoError(t, a.Fail(ctx, l, second))
			for range 2 { // the new answer, then B's new copy of it
				_, rec, err = b.Claim(ctx, key, fp, nil)
				require.NoError(t, err)
				require.Equal(t, dedupe.Failed, rec.State)
				require.Equal(t, second, rec.Response)
			}
		}},
		{"deleted and claimed again on A: B answers in flight", func(t *testing.T, a, b *Store, key string) {
			require.NoError(t, a.Delete(ctx, key))
			_, _, err := a.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			_, _, err = b.Claim(ctx, key, fp, nil)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			schema := pgtest.Schema(t, dsn)
			opts := dedupe.Options{Lease: time.Minute, Retention: time.Hour}
			a := openTieredNode(t, dsn, schema, opts, nil)
			b := openTieredNode(t, dsn, schema, opts, nil)
			const key = "stripe:evt_everywhere"
			l, _, err := a.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.NoError(t, a.Complete(ctx, l, first))
			_, rec, err := b.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Equal(t, first, rec.Response)
			_, err = b.local.Get(ctx, key)
			require.NoError(t, err, "B keeps a copy of what it replayed")
			tc.after(t, a, b, key)
		})
	}
}

// A finished delivery costs the tiered store one statement on Postgres (the
// UPDATE ... RETURNING that records it; the local copy is made from what it
// returns), and so does a replay from the local copy (the check that the
// shared row is still the one copied). Release and the Postgres store's
// Complete are one statement too.
func TestTieredRoundTrips(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	schema := pgtest.Schema(t, dsn)
	qc := &queryCounter{}
	opts := dedupe.Options{Lease: time.Minute, Retention: time.Hour}
	node := openTieredNode(t, dsn, schema, opts, qc)
	ok := dedupe.Response{Status: 200, Body: []byte("ok")}
	l, _, err := node.Claim(ctx, "stripe:evt_rt", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), qc.count(func() { require.NoError(t, node.Complete(ctx, l, ok)) }), "tiered Complete")
	// Complete does not wait for the copy; the local writer takes it
	// before any write handed to it later (lmdb.Store.KeepLater).
	require.NoError(t, node.local.Ping(ctx))
	_, err = node.local.Get(ctx, "stripe:evt_rt")
	require.NoError(t, err, "Complete kept a local copy")
	require.Equal(t, int64(1), qc.count(func() {
		_, rec, err := node.Claim(ctx, "stripe:evt_rt", "fp", nil)
		require.NoError(t, err)
		require.Equal(t, ok, rec.Response)
	}), "tiered replay of the local copy")

	// A replay found in Postgres is copied, and the copy checked against
	// the shared row's updated_at, without reading the row (its request
	// body) again.
	other := openTieredNode(t, dsn, schema, opts, nil)
	l, _, err = other.Claim(ctx, "stripe:evt_rt_elsewhere", "fp", dedupe.NewRequest("application/json", "charge", make([]byte, 1<<10), true))
	require.NoError(t, err)
	require.NoError(t, other.Complete(ctx, l, ok))
	alone := qc.statements(func() {
		_, rec, err := node.Claim(ctx, "stripe:evt_rt_elsewhere", "fp", nil)
		require.NoError(t, err)
		require.Equal(t, ok, rec.Response)
	})
	require.Len(t, alone, 1, "the copy's check")
	require.NotContains(t, alone[0], "req_body", "the copy's check reads the row whole")
	_, err = node.local.Get(ctx, "stripe:evt_rt_elsewhere")
	require.NoError(t, err, "the replay was copied")

	l, _, err = node.Claim(ctx, "stripe:evt_rt_fail", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), qc.count(func() { require.NoError(t, node.Fail(ctx, l, ok)) }), "tiered Fail")

	l, _, err = node.Claim(ctx, "stripe:evt_rt_release", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), qc.count(func() { require.NoError(t, node.Release(ctx, l)) }), "Release")

	l, _, err = node.shared.Claim(ctx, "stripe:evt_rt_pg", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), qc.count(func() { require.NoError(t, node.shared.Complete(ctx, l, ok)) }), "postgres Complete")
	require.Equal(t, int64(1), qc.count(func() { require.ErrorIs(t, node.shared.Complete(ctx, l, ok), dedupe.ErrLeaseLost) }), "a lost lease")
}
