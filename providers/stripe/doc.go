// Package stripe is the webhookd adapter for Stripe webhook deliveries.
//
// Verify checks the Stripe-Signature header the way stripe-go's webhook
// package does: HMAC-SHA256, keyed with the endpoint's whsec_ signing secret
// used as literal bytes, over the decimal timestamp, a ".", and the raw body
// exactly as it arrived. Only v1 signatures count (Stripe's test-mode v0 and
// any unknown scheme are ignored, so a delivery cannot be downgraded), any v1
// may match any configured secret (so a secret can be rolled with both the
// old and new one active), and the timestamp must be within the tolerance
// before any HMAC is computed.
//
// Parse takes the event key from the event's id and fingerprints only what
// Stripe keeps identical across its own retries of one event.
//
// The adapter never re-serialises the body before verifying it, never logs or
// returns secrets or signatures in errors, and never touches the dedupe store.
//
// It is not in webhookd's provider table: /webhooks/stripe is the
// built-in spec providers/spec/builtin/stripe.yaml, with the same variables,
// keys, types and fingerprints. The package stays as the reference
// TestGoAndSpecAgree (providers/spec) holds that spec to, and for the
// signing helpers other packages' tests still use; it goes once they sign
// with the spec (docs/providers/stripe.md, "Header grammar", lists the
// crafted headers on which the two differ).
package stripe
