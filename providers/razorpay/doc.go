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
// Why Go, not a provider spec (docs/provider-specs.md, version 2): the
// format cannot say four things this adapter does on every delivery.
//
//   - The key's middle part is payload.<contains[0]>.entity.id: a path
//     whose second step is named by another value of the body. A
//     template's json path is a fixed list of member names, with no array
//     index (contains[0]) and no step taken from a value; one would need
//     refusal rules of its own (every element of contains a string, the
//     naming value a token without "." or ":").
//   - WEBHOOKD_RAZORPAY_MAX_AGE bounds created_at, a body member, after
//     the MAC (Verify does not parse a body it has not authenticated). A
//     spec's timestamp is a header, query value or signature item, checked
//     before the MAC; and the variable unset means WEBHOOKD_RETENTION while
//     a set one must outlast Razorpay's 24 hours of retries, a lower bound
//     no spec setting has.
//   - Sign re-dates a fixture's created_at, in steps of half the max age
//     (redate), so that `webhookd replay` of the shipped fixtures verifies
//     and sending them twice is a replay; a spec's Sign writes its
//     timestamp into a header, never into the body.
//   - The key parts are strings (event, the entity id) and created_at plain
//     digits; a spec reads a number or a boolean at a path as its text, so
//     "created_at":1.5e9 would be keyed where this adapter answers 400.
//
// Each could be added to the format, but only as a rule that no other
// gateway has: see docs/provider-specs.md, "The Go adapters that stay Go".
package razorpay
