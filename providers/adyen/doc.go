// Package adyen is the webhookd adapter for Adyen's standard webhooks
// (docs/providers.md, "Adyen").
//
// One Adyen request is a notification whose notificationItems each carry
// one event, signed on its own: additionalData.hmacSignature is the base64
// HMAC-SHA256, keyed with the hex-decoded HMAC key from the Customer Area,
// of
//
//	pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success
//
// with an empty string for every absent field and value the integer
// amount.value in minor units (Adyen's Go library, hmacvalidator.GetDataToSign).
// Verify checks every item, against any configured key (Adyen asks that the
// previous key keep working for a while after a rotation), and the basic
// auth credentials when they are configured: the signature covers only
// those eight fields, so Adyen recommends basic auth too.
//
// A request is a batch: Parse returns one event per item,
// keyed merchantAccountCode:pspReference:eventCode:success, typed eventCode,
// whose forwarded body is a notification with that one item, its bytes and
// the request's live value unchanged. live must be "true" or "false": it is
// unsigned and copied into every item's body. The core service can check
// the item's hmacSignature itself, but that proves only the eight signed
// fields; the rest of the item (additionalData, reason, eventDate, ...) and
// live are as the sender wrote them. Ack is Adyen's set answer, once every
// item is settled: 200 with the text body "[accepted]".
//
// The adapter never re-serialises an item, never logs or returns a key, a
// signature or a body in an error, and never touches the dedupe store.
//
// Why Go, not a provider spec (docs/provider-specs.md): each item of a
// batch is signed inside the body, an HMAC over eight of its fields, and
// the merchant accounts are checked per item; a spec signs one text per
// delivery.
package adyen
