// Package midtrans is the webhookd adapter for Midtrans HTTP notifications
// (payment status notifications of Snap and Core API).
//
// Midtrans puts no signature in a header: the body's signature_key field is
// the lowercase hex SHA-512 of order_id + status_code + gross_amount + the
// merchant's server key, plain concatenation, no HMAC. Verify recomputes it
// from the three fields' raw text as it arrived (a gross_amount of
// "100000.00" is hashed as those nine bytes, never as a reformatted number)
// and compares in constant time. To keep the separator-less concatenation
// from being re-split (moving digits from status_code into order_id), the
// three fields must also have the shapes Midtrans gives them: a three-digit
// status_code and a plain decimal gross_amount without leading zeros.
//
// That signature covers neither transaction_id, transaction_status nor the
// refund fields (refund_key, refund_amount), so a captured notification can
// be replayed with its status edited, or as a "new" refund under another
// refund_key. Confirm, enabled with WithStatusCheck, closes that gap: it
// asks Midtrans's GET status API for the transaction and refuses a
// notification whose status, fraud status, order or refund disagrees with
// what Midtrans reports.
//
// Parse keys each status change of a transaction as its own event
// (transaction_id:transaction_status[:fraud_status][:refund_key]) and
// fingerprints only what Midtrans keeps identical across its retries of one
// notification. Sign recomputes signature_key inside a body, changing no
// other byte, so that fixtures can be replayed.
//
// The adapter never re-serialises the body before verifying it, never logs
// or returns the server key, a signature or a body in an error, and never
// touches the dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md): the signature
// covers neither the status nor the transaction id, so each new
// notification is confirmed with Midtrans's status API before it is
// forwarded (a providers.Confirmer); a spec makes no network call.
package midtrans
