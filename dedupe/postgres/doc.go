// Package postgres is the dedupe store every node shares: a Postgres table
// (Open), implementing dedupe.Store with Postgres's row locks making each
// transition atomic across nodes; leases and expiries follow the
// database's clock. It is the only package in webhookd that imports the
// pgx driver (its test kit, pgtest, aside).
//
// It must never put a connection string, host or user into an error (they
// reach logs and the admin tools), and never wait unboundedly: every
// operation has Options.OpTimeout and answers dedupe.ErrUnavailable past it.
package postgres
