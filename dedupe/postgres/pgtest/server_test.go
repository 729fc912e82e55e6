package pgtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestServerBinRefusesToSkipInCI: without initdb the tests that need a
// throwaway server skip on a developer's machine, and fail in CI.
func TestServerBinRefusesToSkipInCI(t *testing.T) {
	missing := func() (string, error) { return "", errors.New("initdb is not installed") }
	found := func() (string, error) { return "/usr/lib/postgresql/15/bin", nil }
	for _, tc := range []struct {
		name        string
		ci          string
		find        func() (string, error)
		want        string
		fatal, skip bool
	}{
		{name: "installed, CI", ci: "true", find: found, want: "/usr/lib/postgresql/15/bin"},
		{name: "missing, developer", find: missing, skip: true},
		{name: "missing, CI", ci: "true", find: missing, fatal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			got := serverBin(&r, func(string) string { return tc.ci }, tc.find)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.fatal, r.fatal != "", r.fatal)
			require.Equal(t, tc.skip, r.skip != "", r.skip)
		})
	}
}

// TestServerPauses: a paused server answers nothing, not even a new
// connection, and a resumed one answers again on the same connection.
func TestServerPauses(t *testing.T) {
	s := Start(t)
	conn := s.Conn()
	ctx := context.Background()
	var one int
	require.NoError(t, conn.QueryRow(ctx, `SELECT 1`).Scan(&one))

	s.Pause()
	answered := make(chan error, 1)
	go func() { answered <- conn.QueryRow(ctx, `SELECT 1`).Scan(&one) }()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := pgx.Connect(short, s.DSN())
	require.Error(t, err, "a paused server accepts no session")
	select {
	case err := <-answered:
		t.Fatalf("a paused server answered: %v", err)
	default:
	}
	s.Resume()
	require.NoError(t, <-answered, "the query sent during the pause is answered once the server runs on")
	require.Equal(t, 1, one)
}
