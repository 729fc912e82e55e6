// Package paddle is the webhookd adapter for Paddle Billing webhook
// notifications.
//
// Verify checks the Paddle-Signature header ("ts=<unix seconds>;h1=<hex>")
// the way Paddle's SDKs do: HMAC-SHA256, keyed with the notification
// destination's secret used as literal bytes (its pdl_ntfset_ prefix
// included), over the timestamp text, a ":", and the raw body exactly as it
// arrived. The header may carry several h1 values and several secrets may be
// configured (a rotation): any h1 may match any secret. The timestamp must be
// within the tolerance of the receiver's clock, either way, before any HMAC is
// computed (docs/providers.md, "paddle", says why a future timestamp is
// bounded too).
//
// Parse keys the event by its event_id, which Paddle keeps across its retries
// and across a replay from the dashboard (a replay is a new notification_id of
// the same event), and fingerprints only what a retry or replay keeps.
//
// The adapter never re-serialises the body before verifying it, never logs or
// returns a secret, a signature or the body in an error, and never touches the
// dedupe store.
//
// It is not in webhookd's provider table: /webhooks/paddle is the
// built-in spec providers/spec/builtin/paddle.yaml, with the same variables,
// keys, types and fingerprints. The package stays as the reference
// TestGoAndSpecAgree (providers/spec) holds that spec to, and for the
// signing helpers other packages' tests still use; it goes once they sign
// with the spec (docs/providers/paddle.md, "Header grammar", lists the
// crafted headers on which the two differ).
package paddle
