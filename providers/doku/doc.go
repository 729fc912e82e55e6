// Package doku is the webhookd adapter for DOKU (Jokul) HTTP notifications,
// the non-SNAP scheme.
//
// DOKU signs a notification with its headers, not its body alone: Verify
// rebuilds DOKU's signature component
//
//	Client-Id:<Client-Id>
//	Request-Id:<Request-Id>
//	Request-Timestamp:<Request-Timestamp>
//	Request-Target:<the notification path registered in the Back Office>
//	Digest:<base64 SHA-256 of the raw body>
//
// (lines joined by "\n", no trailing newline), and checks that the Signature
// header is "HMACSHA256=" and the base64 HMAC-SHA256 of it under one of the
// configured secret keys. Request-Target is a setting, never the request's
// own path: behind a proxy that rewrites /payments/doku/notify to
// /webhooks/doku, DOKU still signs /payments/doku/notify. Client-Id must be
// the configured one, and Request-Timestamp within the tolerance of the
// receiver's clock, either way (docs/providers.md, "doku", says why).
//
// DOKU's body has no event id, so Parse keys the event by
// order.invoice_number, service.id and transaction.status: one invoice that
// goes PENDING then SUCCESS is two events, and DOKU's retries of either
// share its key whatever Request-Id they carry.
//
// SNAP notifications (a token endpoint, RSA signatures) are not handled
// here. The adapter never re-serialises the body before verifying it, never
// logs or returns a secret, a signature or the body in an error, and never
// touches the dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md): DOKU signs a
// component text holding a base64 digest of the body, where version 2's
// body digests are hex.
package doku
