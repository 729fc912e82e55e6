// Package razorpay is the webhookd adapter for Razorpay webhooks.
//
// Verify checks the X-Razorpay-Signature header the way Razorpay's SDKs do:
// the lowercase hex HMAC-SHA256 of the raw body, keyed with the webhook
// secret chosen in the Razorpay Dashboard, used as literal bytes. Any
// configured secret may match: Razorpay signs its retries of an event with
// the secret that was current when the event was created, so after a
// rotation the old secret must stay configured until those retries are
// over (a day). The signature covers no timestamp, so it cannot stop a
// replay: the dedupe store does.
//
// Razorpay's own idempotency id, the x-razorpay-event-id header, is not
// signed: a captured body sent again with a new id would pass for a new
// event. So Parse keys on the signed body instead (docs/contract.md, "Event
// keys"): the event, the id of the payload entity that contains names
// first, and the event's created_at. The fingerprint covers the event's
// members that Razorpay resends unchanged (see fingerprintFields).
//
// The adapter never re-serialises the body before verifying it, never logs
// or returns a secret, a signature or a body in an error, and never touches
// the dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md): the key is the id
// of the payload entity named first in the event's contains list, a path
// chosen by a value, which a spec template cannot say without a special
// case; and WEBHOOKD_RAZORPAY_MAX_AGE bounds the age of a body field
// (created_at), which a spec's timestamp (a header or signature item)
// does not read.
package razorpay
