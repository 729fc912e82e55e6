// Package webhookverify checks the signature webhookd puts on every event it
// forwards when WEBHOOKD_DOWNSTREAM_SECRET is set. The core service imports
// it to make sure a request really comes from webhookd:
//
//	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
//	if err := webhookverify.Verify(secret, r.Header, body, webhookverify.DefaultTolerance); err != nil {
//		http.Error(w, "bad signature", http.StatusUnauthorized)
//		return
//	}
//
// The format is Standard Webhooks (https://www.standardwebhooks.com/):
//
//	webhook-id:        the message id; webhookd sends the Idempotency-Key
//	webhook-timestamp: unix seconds when the attempt was signed
//	webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">
//
// webhook-signature may hold several space-separated signatures; one valid
// v1 signature is enough. webhookd sends one per configured secret, so a
// secret can be rotated without a moment in which the core service refuses
// everything: configure the new secret beside the old one in webhookd, move
// the core service to the new one, then drop the old one from webhookd.
//
// A secret is either "whsec_" followed by the standard base64 encoding of the
// key (the Standard Webhooks convention), or any other string, whose bytes
// are then the key as they are. So "whsec_" + base64(s) and s are the same
// secret; give the whsec_ form to other Standard Webhooks libraries, which
// base64-decode every secret.
//
// The same Signer that webhookd uses is exported, so the core service's
// tests can sign their own requests.
//
// This package depends only on the standard library and webhookd's
// signature package, which holds the scheme itself (signature/webhooks.go),
// shared with webhookd's adapter for Standard Webhooks senders. It must never log, and its errors must never contain a
// secret, a signature or a body: they say which check failed and nothing
// more. Signatures are compared in constant time, and the body is verified
// as the exact bytes received, never re-encoded.
package webhookverify
