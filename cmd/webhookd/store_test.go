package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
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
	dsn := os.Getenv("WEBHOOKD_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WEBHOOKD_TEST_POSTGRES_DSN is not set")
	}
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

	s, err := dedupe.OpenPostgres(ctx, dsn, dedupe.PostgresOptions{Schema: schema, Options: dedupe.Options{PruneInterval: -1}})
	require.NoError(t, err)
	defer s.Close()
	l, _, err := s.Claim(ctx, "stripe:evt_keys", "fp")
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
