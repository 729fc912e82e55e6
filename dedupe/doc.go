// Package dedupe is the contract of webhookd's dedupe store: it records, for
// every provider:event key, whether a delivery is IN_FLIGHT (claimed, under
// a lease), COMPLETED or FAILED (with the downstream's stored answer). This
// package holds what every backend shares and nothing backend-specific: the
// Store interface (and Claimer, the part the receiver needs), Record,
// State, Lease and Response, the sentinel errors, the claim decision
// (Decide), the key check (CheckKey, MaxKeyLen), the options every backend
// takes (Options), the pruner loop (RunPruner, PruneBatches) and the rule
// for retrying an answer's write (Unsettled, RetryDelay).
//
// The backends, each in its own package, each passing the behavioural
// table of dedupe/dedupetest:
//
//   - dedupe/lmdb: an LMDB environment embedded in the process (one node).
//   - dedupe/postgres: a Postgres table shared by every node.
//   - dedupe/tiered: a node's LMDB store in front of the shared Postgres
//     store, which stays the authority.
//
// State machine (one atomic transition each):
//
//	absent ──Claim──▶ IN_FLIGHT ──Complete──▶ COMPLETED
//	                     │  ▲      ──Fail─────▶ FAILED
//	                     │  └─Claim after the lease has passed (takeover)
//	                     └──Release──▶ absent
//
//	COMPLETED or FAILED ──Redrive──▶ the same record, under a redrive lease
//	    ──Complete or Fail──▶ the redrive's answer
//	    ──Release, or the lease passing──▶ the record as it was
//
// A queue destination's event (store and forward) has a state machine of
// its own, QUEUED, an attempt's lease, and COMPLETED or FAILED: queue.go
// (the Queue interface, which every backend implements beside Store).
//
// A lease carries an owner token. Complete, Fail and Release succeed only for
// the token that currently owns the key, so an attempt whose lease was taken
// over cannot overwrite the new owner's record (ErrLeaseLost). A redrive
// never changes a finished record before its answer is recorded, so a crash
// in the middle of one loses nothing: the provider's retries keep being
// replayed the answer the record had.
//
// Nothing lives forever: every record has an expiry, and a background
// pruner deletes what has expired in bounded batches.
//
// This package must never import a backend or its driver (lmdb-go, pgx):
// the receiver, the metrics and the provider kit depend on it alone, and
// cmd/webhookd's layering test keeps it so. A backend must never
// acknowledge a write before it is durable, nor leave one half applied.
package dedupe
