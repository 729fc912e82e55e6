// Package deliver is the delivery loop of store and forward
// (docs/contract.md, "Store and forward"; docs/delivery.md): for each
// queue destination, a worker takes the events that are due from the
// store (dedupe.Queue.Take, under a lease), forwards each with dispatch,
// and settles the attempt: COMPLETED on a 2xx, FAILED on a permanent 4xx or
// once max_age has passed, otherwise QUEUED again after a backoff.
//
// A busy queue is written many events at a time: a worker settles the
// attempts that have ended in one write (dedupe.Queue.Settle) and takes the
// due events in another, waiting, while attempts are open, until half its
// concurrency is free, so that a drained event costs about the CPU of a sync
// forward (BENCHMARKS.md, "Store and forward"). A slot is free once its
// attempt's answer is written, not when the core answered, so no more than
// the concurrency are ever forwarded and unrecorded.
//
// An attempt is exactly one request: the destination's Forwarder is made
// with no retries of its own (dispatch.Options.Retries 0), and its timeout
// is that one request's budget. The store's backoff, not retryablehttp's,
// spaces the retries, so that a retry never holds a lease, a concurrency
// slot or a rate token while it waits.
//
// Everything the loop knows lives in the store: a restart (kill -9
// included) loses no queued event, and an attempt whose process died comes
// due again when its lease passes. Only attempts in flight at a crash may
// reach the core twice; the core dedupes them by Idempotency-Key.
//
// It must never send a stored request that is not whole (such an event is
// FAILED with a reason), start an attempt later than max_age after the
// event's arrival (or last redrive), run more than a destination's
// concurrency at once, start more than its rate in any one-second window,
// or attempt a paused destination.
package deliver
