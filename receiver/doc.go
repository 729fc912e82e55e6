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
// Every error the pipeline meets is mapped to an HTTP status in one place,
// errors.go, against the status table of docs/contract.md.
package receiver
