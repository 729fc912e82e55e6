// Package dispatch forwards a verified, claimed webhook delivery to the core
// service (WEBHOOKD_DOWNSTREAM_URL) and says what became of it.
//
// A Forwarder POSTs the provider's raw body with the headers listed in
// docs/contract.md ("What the core service receives"), retries transient failures
// within one total time budget, and reduces the downstream answer to an
// Outcome: Delivered, Rejected or Unavailable. Classify is the one place that
// reduction happens; the receiver decides from the Outcome what the provider
// gets back and what the dedupe store keeps.
//
// With Options.SigningSecrets set, every attempt is signed in the Standard
// Webhooks format (package webhookverify, which the core service uses to
// check it): webhook-id is the Idempotency-Key, and webhook-timestamp is the
// time of that attempt, so a retry is signed afresh.
//
// The package must never change the body: the core service and any later
// signature check see exactly the bytes the provider sent. It must never log
// a request or response body, a header value that could carry a secret, or
// anything at a level above Debug: what an outcome is worth reporting is the
// caller's decision, made from the returned Result. The core service URL may
// carry a credential in its query or user information: it appears in logs
// and in Result.Err only as RedactURL gives it.
package dispatch
