package spec

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/webhookd/webhookd/providers/internal/weakrsa"
)

// publicScheme is a public-key signature scheme (version 2): the sender
// signs with its private key, and webhookd holds only the public keys, so
// it verifies but never signs (Sign wraps providers.ErrCannotSign).
type publicScheme uint8

const (
	noPublicKey publicScheme = iota
	// rsaPKCS1 is RSASSA-PKCS1-v1_5 with SHA-256 (SNAP's SHA256withRSA).
	rsaPKCS1
	// ecdsaP256 is ECDSA on P-256 with SHA-256, the signature ASN.1 DER.
	ecdsaP256
	// ed25519Scheme is Ed25519 over the signed text itself.
	ed25519Scheme
)

// MinRSABits is the shortest RSA key a public-key spec accepts unless its
// WEBHOOKD_<NAME>_ALLOW_WEAK_KEYS is true.
const MinRSABits = 2048

// allowWeakKeys is the setting every rsa-sha256 spec has, declared by the
// engine rather than each file, so that its name is the same everywhere
// (docs/contract.md, the fourth wave's public-key variables).
const allowWeakKeys = "ALLOW_WEAK_KEYS"

// Errors of a public-key variable; the caller names the variable.
var (
	// ErrNoPublicKey means a public-key value holds no key of the spec's
	// scheme.
	ErrNoPublicKey = errors.New("no public key can be read")
	// ErrWeakKey means an RSA key is shorter than MinRSABits.
	ErrWeakKey = errors.New("RSA key shorter than 2048 bits")
)

// publicKey is one key of a public-key spec.
type publicKey struct {
	rsa *rsa.PublicKey
	ec  *ecdsa.PublicKey
	ed  ed25519.PublicKey
	// weak is an RSA key shorter than 1024 bits, allowed by the spec's
	// ALLOW_WEAK_KEYS: verified by weakrsa, since crypto/rsa refuses it
	// and the GODEBUG that would make it accept one is process-wide.
	weak bool
}

// readPublicKeys reads a public-key variable's value: PEM text when it
// holds "-----BEGIN" (one or more PUBLIC KEY, RSA PUBLIC KEY or
// CERTIFICATE blocks), otherwise a comma-separated list of PEM files,
// each of one or more blocks. Every key must be of the scheme; an RSA key
// shorter than MinRSABits is refused unless allowWeak, and its size is
// then in weak (allowVar, the setting that allows it, is named in the
// refusal). Errors never quote the value, which may be a path but is
// never a secret.
func readPublicKeys(value string, scheme publicScheme, allowWeak bool, allowVar string) (keys []publicKey, weak []int, err error) {
	var texts []string
	if strings.Contains(value, "-----BEGIN") {
		texts = []string{value}
	} else {
		for _, name := range strings.Split(value, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				return nil, nil, fmt.Errorf("%w: an empty file name in the list", ErrNoPublicKey)
			}
			data, err := os.ReadFile(name)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %v", ErrNoPublicKey, err)
			}
			if b, _ := pem.Decode(data); b == nil {
				// Every file named must hold a key: a misnamed one would
				// otherwise leave a rotation with the old key only.
				return nil, nil, fmt.Errorf("%w: %s holds no PEM block", ErrNoPublicKey, name)
			}
			texts = append(texts, string(data))
		}
	}
	for _, text := range texts {
		rest := []byte(text)
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			k, err := parseBlock(b, scheme)
			if err != nil {
				return nil, nil, err
			}
			if k.rsa != nil {
				bits := k.rsa.N.BitLen()
				if bits < MinRSABits {
					if !allowWeak {
						return nil, nil, fmt.Errorf("%w (%d bits; %s=true accepts it)", ErrWeakKey, bits, allowVar)
					}
					weak = append(weak, bits)
				}
				if bits <= weakrsa.MaxBits {
					// crypto/rsa refuses these at Go's default; only
					// this key, allowed here, is verified without it.
					if err := weakrsa.Check(k.rsa); err != nil {
						return nil, nil, fmt.Errorf("%w (%d bits): %v", ErrWeakKey, bits, err)
					}
					k.weak = true
				}
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("%w: no PEM block (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE)", ErrNoPublicKey)
	}
	return keys, weak, nil
}

// parseBlock reads one PEM block as a key of scheme.
func parseBlock(b *pem.Block, scheme publicScheme) (publicKey, error) {
	var pub any
	var err error
	switch b.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(b.Bytes)
	case "CERTIFICATE":
		var c *x509.Certificate
		if c, err = x509.ParseCertificate(b.Bytes); err == nil {
			pub = c.PublicKey
		}
	default:
		return publicKey{}, fmt.Errorf("%w: a %q PEM block (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE)", ErrNoPublicKey, b.Type)
	}
	if err != nil {
		return publicKey{}, fmt.Errorf("%w: a %s block does not parse: %v", ErrNoPublicKey, b.Type, err)
	}
	var k publicKey
	switch key := pub.(type) {
	case *rsa.PublicKey:
		k.rsa = key
	case *ecdsa.PublicKey:
		if key.Curve == elliptic.P256() {
			k.ec = key
		}
	case ed25519.PublicKey:
		k.ed = key
	}
	if (scheme == rsaPKCS1) != (k.rsa != nil) || (scheme == ecdsaP256) != (k.ec != nil) || (scheme == ed25519Scheme) != (k.ed != nil) {
		return publicKey{}, fmt.Errorf("%w: a %s block holds a key of another kind than the spec's algorithm", ErrNoPublicKey, b.Type)
	}
	return k, nil
}

// verifyPublic reports whether sig, encoded as enc, is a signature of
// text under some key. Every key is tried: a rotation lists the old key
// and the new one.
func verifyPublic(keys []publicKey, scheme publicScheme, text []byte, sig string, enc encoding) bool {
	raw, ok := decodeSig(sig, enc)
	if !ok {
		return false
	}
	var digest [sha256.Size]byte
	if scheme != ed25519Scheme {
		digest = sha256.Sum256(text)
	}
	for _, k := range keys {
		switch scheme {
		case rsaPKCS1:
			if k.weak {
				if weakrsa.VerifySHA256(k.rsa, digest[:], raw) == nil {
					return true
				}
				continue
			}
			if rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, digest[:], raw) == nil {
				return true
			}
		case ecdsaP256:
			if ecdsa.VerifyASN1(k.ec, digest[:], raw) {
				return true
			}
		case ed25519Scheme:
			if len(raw) == ed25519.SignatureSize && ed25519.Verify(k.ed, text, raw) {
				return true
			}
		}
	}
	return false
}

// maxPublicSig bounds a decoded public-key signature: an RSA-8192
// signature is 1 KiB.
const maxPublicSig = 1024

// decodeSig decodes a received signature; a public-key signature cannot be
// compared in its encoding as an HMAC is.
func decodeSig(sig string, enc encoding) ([]byte, bool) {
	if len(sig) > 2*maxPublicSig {
		return nil, false
	}
	var raw []byte
	var err error
	switch enc {
	case hexEncoding:
		raw, err = hex.DecodeString(sig)
	case base64Encoding:
		raw, err = base64.StdEncoding.DecodeString(sig)
	default:
		raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(sig, "="))
	}
	return raw, err == nil && len(raw) > 0
}

// signPublic signs the signed text (buf with the body at cut) with the
// Provider's signer, which only tests set: webhookd holds no sender's
// private key.
func (p *Provider) signPublic(buf []byte, cut int, body []byte) (string, error) {
	if cut >= 0 {
		buf = slices.Concat(buf[:cut], body, buf[cut:])
	}
	var sig []byte
	var err error
	switch p.s.sig.alg.public {
	case ed25519Scheme:
		sig, err = p.signer.Sign(rand.Reader, buf, crypto.Hash(0))
	default:
		digest := sha256.Sum256(buf)
		sig, err = p.signer.Sign(rand.Reader, digest[:], crypto.SHA256)
	}
	if err != nil {
		return "", fmt.Errorf("%s: cannot sign: %w", p.s.name, err)
	}
	var out string
	switch p.s.sig.enc {
	case hexEncoding:
		out = hex.EncodeToString(sig)
	case base64Encoding:
		out = base64.StdEncoding.EncodeToString(sig)
	default:
		out = base64.RawURLEncoding.EncodeToString(sig)
	}
	return p.s.sig.prefix + out, nil
}
