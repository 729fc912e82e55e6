// Package xendit is the webhookd adapter for Xendit webhook callbacks
// (invoices, virtual accounts, the Payments API, refunds).
//
// Xendit does not sign its callbacks. Each carries the account's static
// "webhook verification token" in the x-callback-token header, so Verify can
// only compare that header, in constant time, with every configured token
// (more than one while a token is being replaced). The token proves the
// sender knows the secret; it does not protect the body, has no timestamp
// and so cannot stop a replay: the dedupe store is what makes a replayed
// callback harmless.
//
// Xendit's payloads carry no single event id, so Parse derives the key from
// the shape of the body (docs/contract.md, "Event keys"): an envelope with event
// and data is keyed by event and data.id (or data.payment_id and
// data.capture_id), a flat body with a status by id and status (an invoice
// that expires and is then paid gives two events), and anything else by
// payment_id or id. The shapes' keys cannot collide: an envelope's event
// must be a dotted name (all of Xendit's are, payment.succeeded) and a flat
// body's id must hold no dot (none of Xendit's ids do), so a flat
// {"id":"payment.succeeded","status":"py-1"} cannot take the key of the
// envelope payment.succeeded with data.id py-1; a body that breaks either
// rule is refused as malformed. The fingerprint covers only the ids,
// status, amounts and currency, so that a resend in which Xendit changed a
// timestamp or added a field is still the same event.
//
// The adapter never logs or returns a token or a body in an error, and never
// touches the dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md, version 2):
// event.cases can list the shapes in order, but not three rules of this
// adapter's, and without them keys and fingerprints would change.
//
//   - A shape, once chosen by what the body holds, is kept: a body with
//     event and a data object whose data has neither id nor payment_id is
//     400, and so is a flat body with status but no id. event.cases moves
//     on to the next case whenever a reference is missing, so those bodies
//     would be keyed by a later shape (payment_id, id) instead.
//   - The rules that keep the shapes' keys apart are conditions on values:
//     an envelope's event must hold a ".", and a flat body's id beside a
//     status must not (so event:data.id never equals id:status). A spec
//     constrains a key value only by the bytes that separate the key's
//     parts; it has no pattern a value must match.
//   - The fingerprint is per shape, and an envelope's covers members of data
//     (envelopeDataFields) under "data"; a spec fingerprints one list of
//     top-level members for every case, so every stored envelope
//     fingerprint would differ and a retry in flight across the upgrade
//     would be answered 422.
//
// The key parts are also strings only (a number is 400), where a spec reads
// a number at a path as its text.
package xendit
