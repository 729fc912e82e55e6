// Package dedupe is webhookd's dedupe store: it records, for every
// provider:event key, whether a delivery is IN_FLIGHT (claimed, under a
// lease), COMPLETED or FAILED (with the downstream's stored answer). Three
// backends keep the same contract: Store, an LMDB environment embedded in
// the process (one node; Open, OpenExisting); PGStore, a Postgres table
// shared by every node (OpenPostgres); and Tiered, a node's LMDB Store in
// front of the shared PGStore, which stays the authority (NewTiered).
//
// State machine (one atomic write transaction per transition):
//
//	absent ──Claim──▶ IN_FLIGHT ──Complete──▶ COMPLETED
//	                     │  ▲      ──Fail─────▶ FAILED
//	                     │  └─Claim after the lease has passed (takeover)
//	                     └──Release──▶ absent
//
// A lease carries an owner token. Complete, Fail and Release succeed only for
// the token that currently owns the key, so an attempt whose lease was taken
// over cannot overwrite the new owner's record (ErrLeaseLost).
//
// This package owns every byte that goes into LMDB and Postgres: the DBI
// names, the key layout (keys.go), the record encoding (record.go) and the
// table (postgres.go). Nothing else in webhookd imports lmdb-go or pgx,
// tests aside. LMDB commits are durable (synced) unless Options.NoSync says
// otherwise; writes go through a single writer goroutine that coalesces
// concurrent callers into one commit (writer.go).
//
// Nothing lives forever: every record has an expiry (in LMDB, an entry in a
// time-ordered index; in Postgres, an indexed expires_at column), and a
// background pruner deletes what has expired in bounded batches (pruner.go,
// Prune), so that under steady traffic LMDB reuses the freed pages and the
// file stops growing. The LMDB map grows when full, and Backup writes a
// compacted copy while writers run (backup.go).
//
// The store must never acknowledge a write before the commit that holds it
// is on disk, and never leave one write half applied.
package dedupe
