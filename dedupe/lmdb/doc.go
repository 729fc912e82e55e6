// Package lmdb is the dedupe store of one node: an LMDB environment
// embedded in the process (Open, OpenExisting), implementing dedupe.Store.
// It owns every byte that goes into LMDB: the DBI names and key layout
// (keys.go), the record encoding (record.go), the writer that coalesces
// concurrent writes into one durable commit (writer.go), the pruner
// (prune.go), map growth (mapsize.go), and the LMDB-specific tools: the
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
