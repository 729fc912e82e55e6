// Package postgres is the dedupe store every node shares: a Postgres table
// (Open), implementing dedupe.Store with Postgres's row locks making each
// transition atomic across nodes; leases and expiries follow the
// database's clock. It is the only package in webhookd that imports the
// pgx driver (its test kit, pgtest, aside).
//
// Claims, completions, failures and releases are group-committed: the
// writers (writer.go) send whatever is waiting as one pipeline of
// multi-row statements (claim.go, settle.go), one transaction and one WAL
// flush per batch, and answer nobody before its commit. The files hold one
// concept each: store.go (Open, Close, errors), schema.go (creating and
// upgrading the tables), record.go (columns and scanning), read.go (Get,
// List, Recent, Stats), keys.go (the operator's Delete and Redrive) and
// prune.go. docs/postgres.md says what the store needs from the database.
//
// It must never put a connection string, host or user into an error (they
// reach logs and the admin tools), and never wait unboundedly: every
// operation has Options.OpTimeout and answers dedupe.ErrUnavailable past it.
package postgres
