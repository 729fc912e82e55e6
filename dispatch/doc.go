// Package dispatch forwards a verified, claimed webhook delivery to the core
// service (WEBHOOKD_DOWNSTREAM_URL) and says what became of it.
//
// A Forwarder POSTs the provider's raw body with the headers listed in
// CONTRACT.md ("What the core service receives"), retries transient failures
// within one total time budget, and reduces the downstream answer to an
// Outcome: Delivered, Rejected or Unavailable. Classify is the one place that
// reduction happens; the receiver decides from the Outcome what the provider
// gets back and what the dedupe store keeps.
//
// The package must never change the body: the core service and any later
// signature check see exactly the bytes the provider sent. It must never log
// a request or response body, a header value that could carry a secret, or
// anything at a level above Debug: what an outcome is worth reporting is the
// caller's decision, made from the returned Result.
package dispatch
