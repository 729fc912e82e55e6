package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// A statement's named arguments become positions once, each name one
// position however often it appears, and the values given by name are
// queued in that order.
func TestBatchStatementRewritesOnce(t *testing.T) {
	cases := []struct {
		named, sql string
		names      []string
	}{
		{`SELECT @a::bigint, @b, @a`, `SELECT $1::bigint, $2, $1`, []string{"a", "b"}},
		{`SELECT '@not' FROM "x@y" WHERE k = @key_s`, `SELECT '@not' FROM "x@y" WHERE k = $1`, []string{"key_s"}},
		{`SELECT 1`, `SELECT 1`, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.named, func(t *testing.T) {
			st := newBatchStatement(tc.named)
			require.Equal(t, tc.sql, st.sql)
			require.Equal(t, tc.names, st.names)
			b := &pgx.Batch{}
			args := pgx.NamedArgs{"unused": 0}
			for i, n := range tc.names {
				args[n] = i
			}
			st.queue(b, args)
			require.Len(t, b.QueuedQueries, 1)
			require.Equal(t, tc.sql, b.QueuedQueries[0].SQL)
			require.Len(t, b.QueuedQueries[0].Arguments, len(tc.names))
			for i := range tc.names {
				require.Equal(t, i, b.QueuedQueries[0].Arguments[i])
			}
		})
	}
	require.Panics(t, func() { newBatchStatement(`SELECT @a`).queue(&pgx.Batch{}, pgx.NamedArgs{}) }, "an argument not given")
}
