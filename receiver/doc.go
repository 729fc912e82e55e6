// Package receiver is webhookd's HTTP pipeline. For each provider delivery it
// runs, in this order: look up the adapter, read the raw body (bounded),
// verify the signature, derive the event, claim the event key in the dedupe
// store, forward the body downstream, record the outcome, and answer.
//
// Two rules hold throughout. Nothing is written to the store before the
// signature is verified, so an unsigned request can never claim or block an
// event key. And nothing is acknowledged with a 2xx before the downstream has
// answered 2xx: when the downstream cannot be reached, the key is released
// and the provider gets 503, so its own retry delivers the event later.
//
// The core service's answer is passed through unchanged, status and body;
// what decides is its status line, even when the body then breaks (see
// dispatch.Classify). Every 4xx answer says in its Webhook-Rejected-By header
// (RejectedByHeader) whether the core service gave it ("core") or webhookd
// refused the delivery itself ("webhookd"), since the core's own 422 and a
// fingerprint mismatch's 422 are otherwise identical; the delivery log line
// carries the same value as rejected_by.
//
// Every error the pipeline meets is mapped to an HTTP status in one place,
// errors.go, against the status table of docs/contract.md.
package receiver
