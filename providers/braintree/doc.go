// Package braintree is the webhookd adapter for Braintree webhook
// notifications.
//
// Braintree posts an application/x-www-form-urlencoded body of two fields
// (https://developer.paypal.com/braintree/docs/guides/webhooks/parse):
// bt_payload, the base64 of an XML <notification> (MIME base64, a line
// feed every 76 characters, as braintree_python encodes it, or one line
// and a final line feed, as braintree_node does), and bt_signature, one
// "public_key|signature" pair per API key of the merchant, joined by "&".
// Each signature is the lowercase hex HMAC-SHA1 of the bt_payload text,
// keyed with the raw SHA-1 digest of that key's private key; Verify
// accepts it over the payload as posted or with a line feed appended, as
// every official SDK does (braintree_python's
// braintree/webhook_notification_gateway.py, braintree_node's
// lib/braintree/webhook_notification_gateway.js). What a provider spec
// cannot say, and why this adapter is Go: the key is a digest of the
// configured secret, the signature is picked from "&"-joined pairs by the
// public key of each configured pair, the signed text is a form field with
// an optional line feed, and the event key comes from the kind inside
// base64 XML.
//
// Before any HMAC, bt_payload must hold only the characters the SDKs
// allow ([A-Za-z0-9+=/\n]): anything else is 401. A verified payload that
// is not a notification (not base64, not XML, no <notification> root, no
// <kind>) is 400. The XML is read with encoding/xml, which expands no
// entity but the five predefined ones; a document type declaration is
// refused outright, and so is nesting deeper than MaxDepth.
//
// Braintree sends no event id, and its SDKs check no timestamp. Parse keys
// the event as "kind:" + the lowercase hex SHA-256 of the decoded XML, so
// the key is the same whichever line breaks the payload carries, and
// kind may not hold ":" (the key splits back one way). Its fingerprint is
// that same digest: another payload is another event.
//
// The adapter never re-encodes the form before verifying it, never logs or
// returns a private key, a signature or a body in an error, and never
// touches the dedupe store.
package braintree
