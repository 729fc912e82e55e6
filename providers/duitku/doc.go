// Package duitku is the webhookd adapter for Duitku payment callbacks.
//
// Duitku posts its callback as an application/x-www-form-urlencoded body
// whose signature is one of the form fields: signature is the lowercase
// hex MD5 of merchantCode + amount + merchantOrderId + apiKey, the posted
// string values concatenated as sent (Duitku's PHP library,
// Duitku/Api.php, callback). Verify reads the raw form itself, pair by
// pair, so that a field given twice is refused (net/url.ParseQuery would
// merge the values, and a core service may read another of them than the
// one verified), recomputes the signature under every configured API key,
// compares it in constant time and requires merchantCode to be ours. The
// signature covers no timestamp and no event id: the dedupe store is the
// only replay defence.
//
// Duitku sends no event id, so Parse keys the event on what the callback
// says happened (docs/contract.md, "Event keys"):
// merchantOrderId:reference:resultCode. The fingerprint covers the fields
// Duitku's library documents for a callback (see fingerprintFields), in
// name order, so that a retry with its fields in another order, or with a
// field Duitku added since, is the same payload.
//
// The adapter never re-encodes the form before verifying it, never logs or
// returns an API key, a signature or a body in an error, and never touches
// the dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md): the signature
// covers neither resultCode nor reference, so each new callback is
// confirmed with Duitku's transaction status API before it is forwarded (a
// providers.Confirmer); a spec makes no network call.
package duitku
