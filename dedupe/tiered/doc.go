// Package tiered puts a node's LMDB store (dedupe/lmdb) in front of the
// Postgres store its nodes share (dedupe/postgres), implementing
// dedupe.Store (New). Postgres decides every claim; finished records are
// copied locally, and their duplicates replayed from the copy once a
// batched read of the shared rows' updated_at finds them unchanged (or,
// while Postgres is unreachable, without it).
//
// It must never decide a claim from the local copy: IN_FLIGHT records live
// in Postgres only, and a copy is only ever a finished record Postgres held.
package tiered
