// Package pgtest gives tests of the Postgres-backed stores a database:
// the one WEBHOOKD_TEST_POSTGRES_DSN names (tests skip without it), with a
// schema of their own.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSN returns the test database named by WEBHOOKD_TEST_POSTGRES_DSN, or
// skips the test without one.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("WEBHOOKD_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WEBHOOKD_TEST_POSTGRES_DSN is not set")
	}
	return dsn
}

// Schema returns a fresh schema name, dropped when the test ends, so that
// tests sharing the database never see each other's keys.
func Schema(t testing.TB, dsn string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "webhookd_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop test schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop test schema: %v", err)
		}
	})
	return schema
}
