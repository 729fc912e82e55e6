// Package lmdb is the dedupe store of one node: an LMDB environment
// embedded in the process (Open, OpenExisting), implementing dedupe.Store.
// It owns every byte that goes into LMDB. Each file holds one concept: the
// Store and its lifetime (store.go, options.go), the transitions of a key
// (transitions.go: claim, finish, release, redrive, delete, keep), reads
// (read.go), listing newest first and its creation-time index (recent.go),
// the transaction helpers every read and write goes through (txn.go), the
// record counts (counts.go), the DBI names and key layout (keys.go), the
// record encoding (record.go), the writer that coalesces concurrent writes
// into one durable commit (writer.go), the pruner (prune.go), map growth
// (mapsize.go), and the LMDB-specific tools: the
// data file's integrity check at open and its marker (integrity.go), Check
// (check.go), Backup (backup.go) and OpenExisting (existing.go). It is the
// only package in webhookd that imports lmdb-go (as mdb).
//
// Every record has an entry in a time-ordered expiry index, moved with the
// record in the same transaction, so that pruning costs what it deletes,
// not the store's size; under steady traffic LMDB reuses the freed pages
// and the file stops growing.
//
// It must never acknowledge a write before the commit that holds it is on
// disk (unless Options.NoSync, for tests), never leave one write half
// applied, and never crash the process on damaged data: a record LMDB
// cannot hand over is dedupe.ErrCorrupt, a damaged data file ErrDamaged.
package lmdb
