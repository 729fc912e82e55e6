// Package paypal is the webhookd adapter for PayPal REST webhooks.
//
// PayPal signs each transmission with its own private key, so verification
// is asymmetric and needs the network once per signing certificate.
// Verify, with the request's context, checks what PayPal's Java SDK
// checks (Event.validateReceivedEvent, SSLUtil): PAYPAL-TRANSMISSION-SIG is
// the base64 RSA PKCS#1 v1.5 SHA-256 signature (PAYPAL-AUTH-ALGO
// SHA256withRSA) of
//
//	transmissionId|transmissionTime|webhookId|crc32(raw body)
//
// where webhookId is one of the configured webhook ids (PayPal sends it in
// no header) and crc32 is the IEEE CRC-32 of the raw body as an unsigned
// decimal; the certificate comes from PAYPAL-CERT-URL, which must be https
// (plain http only for a loopback host, for tests) on an allowed host, and
// must chain to the system roots (or the configured ones), be valid now,
// and be PayPal's message-verification certificate
// (messageverificationcerts.paypal.com or its sandbox variant). The fetch is
// bounded in time and size, follows no redirect, and its result is cached
// by URL. A fetch that fails (connection, timeout, 5xx or 429, an answer too
// large) wraps providers.ErrUnavailable (503, so that PayPal retries); a
// certificate that is not PayPal's, a host not allowed, or a signature
// that does not match wraps providers.ErrUnauthorized (401).
//
// The body is bound to the signature only through CRC-32, which is not a
// cryptographic digest: 4 chosen bytes give any body the genuine checksum,
// so one captured delivery would let anyone sign events of their own
// (docs/providers.md, "PayPal"). The adapter narrows this: the transmission
// time must be within the tolerance of now (WithTolerance; PayPal retries
// for 3 days without documenting whether a retry is signed afresh, hence
// DefaultTolerance of 4 days), and a transmission id verified with one body
// refuses any other while it is remembered (WithTransmissionCache; per
// process, bounded). The robust fix is Confirm (WithConfirmation), which
// asks PayPal's API for the event and compares what a core acts on.
//
// Parse keys the event on the body's id (WH-...), the same across PayPal's
// retries and resends of one event; PAYPAL-TRANSMISSION-ID names one HTTP
// transmission and is not used. The adapter cannot sign: only PayPal holds
// the key, so `webhookd replay` sends captured headers instead
// (fixtures/paypal/<name>.headers.json).
//
// The adapter never re-serialises the body before verifying it, never logs
// or returns a signature or a body in an error, and never touches the
// dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md): PayPal signs with
// a certificate fetched from PAYPAL-CERT-URL, which must be on an allowed
// host and chain to the roots, and a transmission is remembered with its
// body's digest; a spec neither fetches nor chains certificates, and
// webhookd cannot sign for PayPal at all (the Adapter is no
// providers.Signer).
package paypal
