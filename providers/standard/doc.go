// Package standard is the webhookd adapter for senders that sign their
// webhooks with Standard Webhooks (https://www.standardwebhooks.com/), Svix
// and the platforms built on it included.
//
// Verify checks the webhook-id, webhook-timestamp and webhook-signature
// headers (or svix-id, svix-timestamp and svix-signature, the names Svix
// used first): the timestamp must be within the tolerance of webhookd's
// clock in both directions, and some v1 signature in the space-separated
// list must be the HMAC-SHA256 of "id.timestamp.body" under the
// base64-decoded key of some configured whsec_ secret (more than one while a
// secret is being rotated). The scheme itself is signature/webhooks.go,
// shared with webhookverify, which signs webhookd's own forwards the same
// way.
//
// The event key is the webhook-id header, not a body field: the
// specification keeps it the same on every retry of one message and, since
// it is part of the signed content, a captured body sent again under
// another id fails verification. The body may be any bytes; its type (the
// Webhook-Event-Type) is its "type" member when it is a JSON object with
// one. The fingerprint is the body's bytes: a sender resends the same body
// on every retry.
//
// The adapter never re-serialises the body before verifying it, never logs
// or returns a secret, a signature or a body in an error, and never touches
// the dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md): the three headers
// are read under their webhook-* or svix-* names (the same value when both
// are sent), and a spec names one header for each; the body need not be
// JSON, and a spec parses JSON or a form.
package standard
