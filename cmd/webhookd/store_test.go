package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
	"github.com/webhookd/webhookd/dedupe/tiered"
)

func TestBackupRefusesPostgres(t *testing.T) {
	for _, store := range []string{"postgres", "tiered"} {
		clearEnv(t)
		t.Setenv("WEBHOOKD_STORE", store)
		t.Setenv("WEBHOOKD_POSTGRES_DSN", "postgres://u@127.0.0.1:1/x")
		var stderr bytes.Buffer
		require.Equal(t, 1, run(context.Background(), []string{"backup", t.TempDir() + "/b"}, &bytes.Buffer{}, &stderr))
		require.Contains(t, stderr.String(), "pg_dump")
	}
}

// keys reads and edits the shared store when WEBHOOKD_STORE=postgres.
func TestKeysOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	schema := testPGSchema(t, dsn)

	s, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema, Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err)
	defer s.Close()
	l, _, err := s.Claim(ctx, "stripe:evt_keys", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 201}))

	clearEnv(t)
	t.Setenv("WEBHOOKD_STORE", "postgres")
	t.Setenv("WEBHOOKD_POSTGRES_DSN", dsn+"&search_path="+schema)
	t.Setenv("WEBHOOKD_DATA_DIR", t.TempDir()+"/none") // postgres needs no data dir
	var out, stderr bytes.Buffer
	require.Zero(t, run(ctx, []string{"keys", "list"}, &out, &stderr), stderr.String())
	require.Contains(t, out.String(), "stripe:evt_keys")
	require.Zero(t, run(ctx, []string{"keys", "delete", "stripe:evt_keys"}, &out, &stderr), stderr.String())
	_, err = s.Get(ctx, "stripe:evt_keys")
	require.ErrorIs(t, err, dedupe.ErrNotFound)
	require.Equal(t, 1, run(ctx, []string{"keys", "get", "stripe:evt_keys"}, &out, &stderr))
}

// A tiered node whose shared row was deleted on another node still holds
// its local copy until its next claim of the key; `keys get` there shows
// it and `keys delete` removes it, rather than stopping at "no record" in
// Postgres.
func TestKeysDeleteTieredAfterSharedRowIsGone(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	schema := testPGSchema(t, dsn)
	openNode := func(dir string) *tiered.Store {
		opts := lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true}
		local, err := lmdb.Open(dir, opts)
		require.NoError(t, err)
		shared, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema, Options: opts.Options})
		require.NoError(t, err)
		return tiered.New(local, shared)
	}
	const key = "stripe:evt_tiered_delete"
	dirA, dirB := t.TempDir(), t.TempDir()
	a, b := openNode(dirA), openNode(dirB)
	defer a.Close()
	l, _, err := a.Claim(ctx, key, "fp", nil)
	require.NoError(t, err)
	require.NoError(t, a.Complete(ctx, l, dedupe.Response{Status: 201}))
	_, rec, err := b.Claim(ctx, key, "fp", nil) // b replays, and keeps a copy
	require.NoError(t, err)
	require.NotNil(t, rec)
	require.NoError(t, a.Delete(ctx, key)) // the shared row and a's copy
	// b would drop its copy at its next claim of the key (dedupe/tiered's
	// TestTieredDeleteTakesEffectOnEveryNode); until then it holds it.
	require.NoError(t, b.Close())

	clearEnv(t)
	t.Setenv("WEBHOOKD_STORE", "tiered")
	t.Setenv("WEBHOOKD_POSTGRES_DSN", dsn+"&search_path="+schema)
	t.Setenv("WEBHOOKD_DATA_DIR", dirB)
	var out, stderr bytes.Buffer
	require.Zero(t, run(ctx, []string{"keys", "get", key}, &out, &stderr), stderr.String())
	require.Regexp(t, `(?m)^state\s+COMPLETED$`, out.String(), "get shows the copy b replays")
	out.Reset()
	require.Zero(t, run(ctx, []string{"keys", "delete", key}, &out, &stderr), stderr.String())
	require.Contains(t, out.String(), "deleted "+key)
	require.Equal(t, 1, run(ctx, []string{"keys", "delete", key}, &out, &stderr), "in neither store now")
	require.Contains(t, stderr.String(), "no record for "+key)

	b = openNode(dirB)
	defer b.Close()
	l, rec, err = b.Claim(ctx, key, "fp", nil)
	require.NoError(t, err)
	require.Nil(t, rec, "b forwards the event again instead of replaying")
	require.NoError(t, b.Release(ctx, l))
}

// testPGSchema creates a fresh schema, dropped when the test ends.
func testPGSchema(t *testing.T, dsn string) string {
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "webhookd_cmd_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		require.NoError(t, err)
		defer c.Close(context.Background())
		_, err = c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		require.NoError(t, err)
	})
	return schema
}

// In tiered mode only the shared store counts pruned records, so that
// webhookd_store_pruned_records_total does not count each record twice;
// the local store keeps OnCommit, which only LMDB calls.
func TestTieredCountsPrunesOnce(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := testPGSchema(t, dsn)
	var (
		pruned int
		later  atomic.Bool
	)
	opts := lmdb.Options{
		Options: dedupe.Options{
			Lease: time.Minute, Retention: time.Minute, PruneInterval: -1,
			Now: func() time.Time {
				if later.Load() {
					return time.Now().Add(time.Hour)
				}
				return time.Now()
			},
			OnPrune: func(n int) { pruned += n },
		},
		NoSync:   true,
		OnCommit: func(int, time.Duration) {},
	}
	var localOpts lmdb.Options
	cfg := &config{Store: "tiered", PostgresDSN: dsn + "&search_path=" + schema, DataDir: t.TempDir()}
	s, err := openStore(context.Background(), cfg, opts, func(dir string, o lmdb.Options) (*lmdb.Store, error) {
		localOpts = o
		return lmdb.Open(dir, o)
	})
	require.NoError(t, err)
	defer s.Close()
	require.Nil(t, localOpts.OnPrune)
	require.NotNil(t, localOpts.OnCommit)

	// A finished record lives in both stores; pruning both counts it once.
	ctx := context.Background()
	l, _, err := s.Claim(ctx, "stripe:evt_prune_once", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	later.Store(true)
	n, err := s.(*tiered.Store).Prune(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, pruned)
}
