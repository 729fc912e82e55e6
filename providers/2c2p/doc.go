// Package twoctwop is the webhookd adapter for 2C2P's backend payment
// responses (route and key prefix "2c2p": a Go package name cannot start
// with a digit).
//
// 2C2P posts a JSON body {"payload":"<JWT>"} whose token is a JWS in
// compact serialization signed with HS256, the HMAC-SHA256 keyed with the
// merchant's secret key used as its text (not hex-decoded), over
// base64url(header) + "." + base64url(claims)
// (https://developer.2c2p.com/docs/api-payment-response-backend,
// https://developer.2c2p.com/docs/json-web-tokens-jwt). What a provider
// spec cannot say, and why this adapter is Go: the signature and the
// signed text are both inside one body member, the header's algorithm must
// be checked before anything else, and the event key comes from the
// claims of the verified token, not from the body as posted.
//
// Verify is strict about the token rather than lenient like a JWT library
// built for many algorithms: exactly three segments, each unpadded
// base64url with no stray bits, a header that is a JSON object with unique
// member names whose alg is exactly "HS256" (any other, "none" included,
// is 401 before any HMAC) and with no crit; the signature is compared in
// constant time under every configured key. No claim (exp, iat) is read:
// 2C2P documents none on this token, and the dedupe store is the replay
// defence.
//
// Parse keys the event on the verified claims (docs/contract.md, "Event
// keys"): invoiceNo:respCode, then :tranRef when present, none of
// which may hold ":" (the key splits back one way); Type is respCode.
//
// The adapter never logs or returns a key, a token or the body in an
// error, and never touches the dedupe store.
package twoctwop
