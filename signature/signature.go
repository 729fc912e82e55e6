// Package signature holds the small cryptographic building blocks that
// provider adapters use to authenticate webhook deliveries: HMAC and digest
// helpers, constant-time comparisons and a timestamp recency check.
//
// It knows nothing about any provider's header format or payload: an adapter
// decides what bytes are signed and with which key, and this package only
// computes and compares. The one exception is Standard Webhooks
// (webhooks.go), a scheme two parts of webhookd share: the signed content,
// key encoding and signature list live there once, for webhookverify (the
// forwards to the core service) and for the standard adapter. Every comparison of a secret-derived value here runs
// in constant time; callers must never compare signatures or tokens with ==
// or bytes.Equal.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
)

// HMACSHA256 returns the raw 32-byte HMAC-SHA256 under key of the
// concatenation of the msg parts. Passing the signed message in parts (for
// example a timestamp prefix and the raw body) avoids copying a large body
// just to prepend a few bytes.
func HMACSHA256(key []byte, msg ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, part := range msg {
		mac.Write(part) // hash.Hash.Write never returns an error.
	}
	return mac.Sum(nil)
}

// MatchHMACSHA256 reports whether any of sigs is the HMACSHA256 of the msg
// parts under any of keys, comparing with Equal. It is the check of a
// provider that signs with every active secret while one is rotated and
// sends several signatures in one header: one MAC is computed per key, and
// every signature is compared with it, so the cost is bounded by the
// caller's limits on keys and signatures, never by what matched first.
func MatchHMACSHA256(keys []*HMACKey, sigs [][]byte, msg ...[]byte) bool {
	for _, key := range keys {
		sum := key.Sum(msg...)
		for _, sig := range sigs {
			if Equal(sum[:], sig) {
				return true
			}
		}
	}
	return false
}

// HMACSHA256Hex is HMACSHA256 encoded as 64 lowercase hex characters.
func HMACSHA256Hex(key []byte, msg ...[]byte) string {
	return hex.EncodeToString(HMACSHA256(key, msg...))
}

// SHA512Hex returns the SHA-512 digest of s as 128 lowercase hex characters.
func SHA512Hex(s string) string {
	sum := sha512.Sum512([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Equal reports whether a and b are equal, in time that depends only on their
// lengths. Use it to compare a received MAC with the expected one after both
// are decoded to raw bytes; a MAC's length is public, so revealing whether
// the lengths match costs nothing.
func Equal(a, b []byte) bool {
	return hmac.Equal(a, b)
}

// EqualString reports whether the shared-secret tokens a and b are equal. It
// compares SHA-256 digests of both in constant time, so the time taken does
// not reveal how long the expected token is or how many leading bytes
// matched; only the hashing itself is proportional to the inputs' lengths,
// which an attacker already knows for the token they sent.
func EqualString(a, b string) bool {
	da := sha256.Sum256([]byte(a))
	db := sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}
