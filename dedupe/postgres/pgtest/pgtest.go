// Package pgtest gives tests of the Postgres-backed stores a database:
// the one WEBHOOKD_TEST_POSTGRES_DSN names, with a schema of their own.
// Without it the tests skip on a developer's machine and fail in CI
// (CI=true), so that CI never reports ok for tests that did not run.
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

// DSN returns the test database named by WEBHOOKD_TEST_POSTGRES_DSN.
// Without one it skips the test, or fails it under CI=true.
func DSN(t testing.TB) string {
	t.Helper()
	return dsn(t, os.Getenv)
}

// skipper is the part of testing.TB that dsn uses, so that a test can
// watch it decide.
type skipper interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

func dsn(t skipper, getenv func(string) string) string {
	t.Helper()
	dsn := getenv("WEBHOOKD_TEST_POSTGRES_DSN")
	if dsn == "" {
		if getenv("CI") == "true" {
			t.Fatal("WEBHOOKD_TEST_POSTGRES_DSN is not set: the Postgres tests must run in CI (.ci/run starts Postgres and sets it)")
			return ""
		}
		t.Skip("WEBHOOKD_TEST_POSTGRES_DSN is not set (a database the tests may create schemas in); CI runs these tests")
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
