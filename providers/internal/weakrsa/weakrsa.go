// Package weakrsa verifies RSASSA-PKCS1-v1_5 signatures with SHA-256
// (RFC 8017, section 8.2.2) under RSA public keys shorter than 1024 bits.
//
// Go's crypto/rsa refuses such keys unless GODEBUG=rsa1024min=0, and that
// setting is the whole process's: it would let every RSA operation (TLS
// certificates included) accept them. A provider spec that allows a weak key
// explicitly (ALLOW_WEAK_KEYS, docs/provider-specs.md "Weak keys"; Winpay's
// sandbox key is 1023 bits) verifies with this package instead, and the
// process keeps Go's default. A key of 1024 bits or more is crypto/rsa's
// and is refused here.
//
// It must never sign, decrypt or hold a private key: a verification handles
// public values only (the key, the signature, the digest), so math/big's
// variable-time arithmetic reveals nothing that is not already public.
package weakrsa

import (
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
)

// MaxBits is the longest modulus this package verifies with; longer keys
// are crypto/rsa's.
const MaxBits = 1023

// sha256Prefix is the DER encoding of SHA-256's DigestInfo up to the digest
// (RFC 8017, section 9.2, note 1).
var sha256Prefix = [...]byte{0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20}

// minSize is the shortest modulus, in bytes, that holds an encoded SHA-256
// DigestInfo: the DigestInfo, 0x00 0x01, eight bytes of 0xff padding at
// least, and 0x00 (RFC 8017, section 9.2, step 3).
const minSize = len(sha256Prefix) + sha256.Size + 11

// Errors of Check and VerifySHA256.
var (
	// ErrKey means the public key cannot be used here: longer than
	// MaxBits, too short to hold a SHA-256 DigestInfo, an even modulus, or
	// an exponent that is even or smaller than 3 (with e = 1 a signature
	// is the encoded block itself: anyone could make one).
	ErrKey = errors.New("weakrsa: unusable RSA public key")
	// ErrVerification means the signature is not a valid signature of the
	// digest under the key.
	ErrVerification = errors.New("weakrsa: verification error")
)

// Check reports whether VerifySHA256 can use pub: a key shorter than 1024
// bits whose modulus and exponent are those of an RSA key.
func Check(pub *rsa.PublicKey) error {
	if pub == nil || pub.N == nil || pub.N.Sign() <= 0 {
		return fmt.Errorf("%w: no modulus", ErrKey)
	}
	if bits := pub.N.BitLen(); bits > MaxBits {
		return fmt.Errorf("%w: %d bits: keys of 1024 bits or more are crypto/rsa's", ErrKey, bits)
	}
	return check(pub)
}

// check is Check without the size limit.
func check(pub *rsa.PublicKey) error {
	switch {
	case pub.N.Bit(0) == 0:
		return fmt.Errorf("%w: even modulus", ErrKey)
	case size(pub) < minSize:
		return fmt.Errorf("%w: %d bits cannot hold a SHA-256 signature", ErrKey, pub.N.BitLen())
	case pub.E < 3 || pub.E%2 == 0:
		return fmt.Errorf("%w: public exponent %d (must be odd and at least 3)", ErrKey, pub.E)
	}
	return nil
}

// size is the modulus's length in bytes: k in RFC 8017.
func size(pub *rsa.PublicKey) int { return (pub.N.BitLen() + 7) / 8 }

// VerifySHA256 verifies sig, an RSASSA-PKCS1-v1_5 signature, of digest, a
// SHA-256 hash, under pub, a key Check accepts. It returns nil only when
// sig is exactly as long as the modulus, is smaller than it, and raised to
// the public exponent gives exactly the encoding of digest's DigestInfo:
// every byte of the block is compared, so that no padding, garbage or
// other algorithm can pass.
func VerifySHA256(pub *rsa.PublicKey, digest, sig []byte) error {
	if err := Check(pub); err != nil {
		return err
	}
	return verify(pub, digest, sig)
}

// verify is VerifySHA256 for any key check accepts, whatever its size.
func verify(pub *rsa.PublicKey, digest, sig []byte) error {
	k := size(pub)
	if len(digest) != sha256.Size || len(sig) != k {
		return ErrVerification
	}
	s := new(big.Int).SetBytes(sig)
	if s.Cmp(pub.N) >= 0 {
		return ErrVerification
	}
	m := new(big.Int).Exp(s, big.NewInt(int64(pub.E)), pub.N)
	// m < N < 256^k, so it always fills k bytes.
	if subtle.ConstantTimeCompare(m.FillBytes(make([]byte, k)), encode(digest, k)) != 1 {
		return ErrVerification
	}
	return nil
}

// encode is EMSA-PKCS1-v1_5-ENCODE of digest for a k-byte modulus (RFC
// 8017, section 9.2): 0x00 0x01, 0xff up to the DigestInfo, 0x00, the
// DigestInfo.
func encode(digest []byte, k int) []byte {
	em := make([]byte, k)
	em[1] = 0x01
	t := k - len(sha256Prefix) - len(digest)
	for i := 2; i < t-1; i++ {
		em[i] = 0xff
	}
	copy(em[t:], sha256Prefix[:])
	copy(em[t+len(sha256Prefix):], digest)
	return em
}
