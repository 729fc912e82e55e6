package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// A user granted only DML on a table an administrator created can open the
// store: no DDL runs when the table and index exist. Without them, it gets
// a configuration error naming what is missing, not ErrUnavailable.
func TestPostgresOpensWithDMLGrantsOnly(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	ready := testSchema(t, dsn)   // table and index created by the admin
	missing := testSchema(t, dsn) // empty
	admin := openTestPG(t, dsn, ready, dedupe.Options{})
	require.NoError(t, admin.Close())

	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "webhookd_dml_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop test role: %v", err)
			return
		}
		defer c.Close(ctx)
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Errorf("drop test role: %v", err)
			}
		}
	})
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`CREATE SCHEMA ` + missing,
		`GRANT USAGE ON SCHEMA ` + ready + `, ` + missing + ` TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ` + ready + `.` + Table + ` TO ` + role,
	} {
		_, err := conn.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = url.User(role)

	s := openTestPG(t, u.String(), ready, dedupe.Options{})
	l, rec, err := s.Claim(ctx, "stripe:evt_dml", "fp", nil)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	require.NoError(t, s.Ping(ctx))

	_, err = Open(ctx, u.String(), Options{Schema: missing, Options: dedupe.Options{PruneInterval: -1}})
	require.Error(t, err)
	require.NotErrorIs(t, err, dedupe.ErrUnavailable)
	require.Contains(t, err.Error(), "table "+pgx.Identifier{missing, Table}.Sanitize())
	require.Contains(t, err.Error(), "permission denied")
	require.NotContains(t, err.Error(), role)
}
