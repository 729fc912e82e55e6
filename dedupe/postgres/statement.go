package postgres

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// batchStatement is one of a writer's statements with its named arguments
// (@name) rewritten once, when the store opens, into pgx's positional ones
// ($1, $2, ...). Queued with pgx.NamedArgs, each statement (the claim's is
// some 2 KB) would be lexed again for every batch: about 3 % of
// webhookd's CPU on Postgres under webhookbench (BENCHMARKS.md, "Postgres
// (group commit)").
type batchStatement struct {
	sql   string
	names []string // the named argument of each position, $1's first
}

// namedArg finds the names of a statement's arguments. pgx's own rewrite,
// given each name as its value, then says which name went to which
// position, skipping what its lexer does not take for an argument.
var namedArg = regexp.MustCompile(`@([a-z_]+)`)

// newBatchStatement rewrites named, a statement of this package.
func newBatchStatement(named string) batchStatement {
	na := pgx.NamedArgs{}
	for _, m := range namedArg.FindAllStringSubmatch(named, -1) {
		na[m[1]] = m[1]
	}
	sql, args, err := na.RewriteQuery(context.Background(), nil, named, nil)
	if err != nil {
		panic(fmt.Sprintf("dedupe: postgres: statement does not rewrite: %v", err))
	}
	st := batchStatement{sql: sql, names: make([]string, len(args))}
	for i, a := range args {
		st.names[i] = a.(string)
	}
	return st
}

// queue adds the statement to b with args, which must hold every argument
// the statement names (a statement and its caller are written together:
// a name left out is a bug, caught by any test that writes).
func (st batchStatement) queue(b *pgx.Batch, args pgx.NamedArgs) *pgx.QueuedQuery {
	vals := make([]any, len(st.names))
	for i, n := range st.names {
		v, ok := args[n]
		if !ok {
			panic("dedupe: postgres: statement argument @" + n + " not given")
		}
		vals[i] = v
	}
	return b.Queue(st.sql, vals...)
}
