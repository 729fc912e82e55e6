package weakrsa

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// readPublic reads a PEM public key of testdata.
func readPublic(t testing.TB, text []byte) *rsa.PublicKey {
	t.Helper()
	b, _ := pem.Decode(text)
	require.NotNil(t, b)
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	require.NoError(t, err)
	return pub.(*rsa.PublicKey)
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

// flips returns sig with each bit flipped in turn.
func flips(sig []byte) [][]byte {
	var out [][]byte
	for i := range sig {
		for bit := range 8 {
			c := slices.Clone(sig)
			c[i] ^= 1 << bit
			out = append(out, c)
		}
	}
	return out
}

// TestOpenSSLVectors: signatures OpenSSL made under a 1023-bit key (e =
// 65537) and a 1000-bit one (e = 3) verify; any flipped bit of the
// signature, another digest, or the digest of another text does not.
func TestOpenSSLVectors(t *testing.T) {
	for _, name := range []string{"k1023", "k1000e3"} {
		t.Run(name, func(t *testing.T) {
			pub := readPublic(t, readFile(t, name+".pub.pem"))
			require.Less(t, pub.N.BitLen(), 1024)
			text, sig := readFile(t, name+".txt"), readFile(t, name+".sig")
			digest := sha256.Sum256(text)
			require.NoError(t, VerifySHA256(pub, digest[:], sig))

			for i, bad := range flips(sig) {
				require.ErrorIs(t, VerifySHA256(pub, digest[:], bad), ErrVerification, "bit %d flipped", i)
			}
			other := digest
			other[sha256.Size-1] ^= 1
			require.ErrorIs(t, VerifySHA256(pub, other[:], sig), ErrVerification, "another digest")
			changed := sha256.Sum256(append(slices.Clone(text), '.'))
			require.ErrorIs(t, VerifySHA256(pub, changed[:], sig), ErrVerification, "another text")
			require.ErrorIs(t, VerifySHA256(pub, digest[:31], sig), ErrVerification, "a digest that is not SHA-256's")
		})
	}
}

// Winpay's published SNAP callback and the 1023-bit sandbox key that
// verifies it (docs/providers/winpay.md; the built-in winpay spec's
// example winpay-published-callback).
const (
	winpaySandboxKey = `-----BEGIN PUBLIC KEY-----
MIGeMA0GCSqGSIb3DQEBAQUAA4GMADCBiAKBgHGK10J1oBbCD75Wy8P5rL8zzCz9
lpHZ7OIHVaO4vlX0tjpKD887ldaTLl4Vdhc6I88OHscV/ijQ7OQ07IpWLAoSm7VK
puiUDt9xUx9dCHAIrH6DDNOI95z2b6jxwh81ZTC+LCDsEb5b797dmxa7Kv8kABjo
Nt8JR33E9p3d7uzrAgMBAAE=
-----END PUBLIC KEY-----
`
	winpayBody      = `{"partnerServiceId":"    9042","customerNo":"00000009","virtualAccountNo":"    904200000009","virtualAccountName":"WINPAY - fiandi","trxId":"INV-000000023220","paymentRequestId":"45539","paidAmount":{"value":"10000.00","currency":"IDR"},"trxDateTime":"2024-01-11T08:57:55+07:00","additionalInfo":{"contractId":"si1cd5671d-2ffe-4cca-aff0-b8ee9bc1c041","channel":"BSI"}}`
	winpaySignature = "Zng8tJgtK2lPd8CP89KyO1OGEKXn1tFfXevTGIn5IhHYDpobp7+4uvuczP5HwldghO5mzkh03v6wnggoZev8M2RyKegbrRaIr66KbAgr6sfKfH9MfkXFcEKpF/am8QMr4oExKPdYTdGEr6pq6m1CzUjFQsyu9z6JuMGrjXrxFXU="
)

// TestWinpayVector: Winpay's own signature of its callback's SNAP string
// to sign (POST:<listener path><service path>:<body digest>:<timestamp>)
// verifies under its 1023-bit sandbox key, and not over another path.
func TestWinpayVector(t *testing.T) {
	pub := readPublic(t, []byte(winpaySandboxKey))
	require.Equal(t, 1023, pub.N.BitLen())
	sig, err := base64.StdEncoding.DecodeString(winpaySignature)
	require.NoError(t, err)
	bodyDigest := sha256.Sum256([]byte(winpayBody))
	signed := func(path string) []byte {
		d := sha256.Sum256([]byte("POST:" + path + ":" + hex.EncodeToString(bodyDigest[:]) + ":2024-01-11T08:57:55+07:00"))
		return d[:]
	}
	require.NoError(t, VerifySHA256(pub, signed("/sandbox_prod/url_listener.php/v1.0/transfer-va/payment"), sig))
	require.ErrorIs(t, VerifySHA256(pub, signed("/webhooks/winpay/v1.0/transfer-va/payment"), sig), ErrVerification)
}

// testKey is an RSA key pair of the given size made with math/big, since
// crypto/rsa generates none under 1024 bits; raw "signs" any block, so that
// a test can sign encodings a genuine signer never makes.
type testKey struct {
	pub rsa.PublicKey
	d   *big.Int
}

func newTestKey(t testing.TB, bits, e int) *testKey {
	t.Helper()
	E := big.NewInt(int64(e))
	one := big.NewInt(1)
	for {
		p, err := rand.Prime(rand.Reader, (bits+1)/2)
		require.NoError(t, err)
		q, err := rand.Prime(rand.Reader, bits/2)
		require.NoError(t, err)
		n := new(big.Int).Mul(p, q)
		phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))
		d := new(big.Int).ModInverse(E, phi)
		if p.Cmp(q) == 0 || n.BitLen() != bits || d == nil {
			continue
		}
		return &testKey{pub: rsa.PublicKey{N: n, E: e}, d: d}
	}
}

// raw returns em^d mod N as a signature of the key's size.
func (k *testKey) raw(em []byte) []byte {
	s := new(big.Int).Exp(new(big.Int).SetBytes(em), k.d, k.pub.N)
	return s.FillBytes(make([]byte, size(&k.pub)))
}

// TestEncodingExact: of the blocks below, signed with a 1023-bit key, only
// the exact encoding of the digest's DigestInfo verifies: not one with
// another algorithm's DigestInfo, without the NULL parameters, with bytes
// after the digest (the shape of Bleichenbacher's forgeries), with other
// padding, or with another block type.
func TestEncodingExact(t *testing.T) {
	for _, e := range []int{3, 65537} {
		key := newTestKey(t, 1023, e)
		k := size(&key.pub)
		digest := sha256.Sum256([]byte("an event"))
		good := encode(digest[:], k)
		require.NoError(t, VerifySHA256(&key.pub, digest[:], key.raw(good)), "the exact encoding")

		// block builds 0x00 0x01 ff.. 0x00 tail, the padding filling k.
		block := func(tail []byte) []byte {
			em := make([]byte, k)
			em[1] = 0x01
			for i := 2; i < k-len(tail)-1; i++ {
				em[i] = 0xff
			}
			copy(em[k-len(tail):], tail)
			return em
		}
		sha1Prefix := []byte{0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14}
		noNull := []byte{0x30, 0x2f, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x04, 0x20}
		set := func(i int, b byte) []byte {
			em := slices.Clone(good)
			em[i] = b
			return em
		}
		cases := map[string][]byte{
			"another algorithm's DigestInfo": block(slices.Concat(sha1Prefix, digest[:20])),
			"no NULL parameters":             block(slices.Concat(noNull, digest[:])),
			"garbage after the digest":       block(slices.Concat(sha256Prefix[:], digest[:], []byte("garbage!"))),
			"the digest's tail as garbage":   block(slices.Concat(sha256Prefix[:], digest[:16], make([]byte, 16))),
			"block type 2":                   set(1, 0x02),
			"a leading 0x01":                 set(0, 0x01),
			"padding with a zero in it":      set(5, 0x00),
			"padding with another byte":      set(k/2, 0xfe),
			"no zero after the padding":      set(k-len(sha256Prefix)-sha256.Size-1, 0xff),
			"another digest":                 encode(make([]byte, sha256.Size), k),
		}
		for name, em := range cases {
			require.Len(t, em, k, name)
			require.ErrorIs(t, VerifySHA256(&key.pub, digest[:], key.raw(em)), ErrVerification, "e=%d: %s", e, name)
		}
	}
}

// TestSignatureRange: a signature that is not exactly the modulus's
// length, or not smaller than the modulus, is refused, even one that is
// congruent to a valid signature.
func TestSignatureRange(t *testing.T) {
	key := newTestKey(t, 1023, 65537)
	k := size(&key.pub)
	digest := sha256.Sum256([]byte("an event"))
	sig := key.raw(encode(digest[:], k))
	require.NoError(t, VerifySHA256(&key.pub, digest[:], sig))

	plusN := new(big.Int).Add(new(big.Int).SetBytes(sig), key.pub.N)
	require.LessOrEqual(t, plusN.BitLen(), 8*k, "s+N fits the signature's length")
	for name, bad := range map[string][]byte{
		"s + N":           plusN.FillBytes(make([]byte, k)),
		"N":               key.pub.N.FillBytes(make([]byte, k)),
		"a zero in front": append([]byte{0}, sig...),
		"a byte short":    sig[1:],
		"empty":           nil,
		"zero":            make([]byte, k),
	} {
		require.ErrorIs(t, VerifySHA256(&key.pub, digest[:], bad), ErrVerification, name)
	}
}

// TestAgreesWithCryptoRSA: on keys crypto/rsa accepts, the encoding signed
// is byte for byte crypto/rsa's own signature (PKCS#1 v1.5 is
// deterministic), and both accept and refuse the same signatures.
func TestAgreesWithCryptoRSA(t *testing.T) {
	for _, bits := range []int{1024, 2048} {
		priv, err := rsa.GenerateKey(rand.Reader, bits)
		require.NoError(t, err)
		digest := sha256.Sum256([]byte("an event"))
		sig, err := rsa.SignPKCS1v15(nil, priv, crypto.SHA256, digest[:])
		require.NoError(t, err)
		key := &testKey{pub: priv.PublicKey, d: priv.D}
		require.Equal(t, sig, key.raw(encode(digest[:], size(&priv.PublicKey))), "%d bits: encode is EMSA-PKCS1-v1_5", bits)
		require.NoError(t, verify(&priv.PublicKey, digest[:], sig))
		for _, bad := range flips(sig)[:64] {
			require.Error(t, rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, digest[:], bad))
			require.ErrorIs(t, verify(&priv.PublicKey, digest[:], bad), ErrVerification)
		}
		require.ErrorIs(t, VerifySHA256(&priv.PublicKey, digest[:], sig), ErrKey, "%d bits are crypto/rsa's", bits)
	}
}

// TestCheck: only an RSA key shorter than 1024 bits, long enough for a
// SHA-256 signature, with an odd modulus and an odd exponent of at least 3
// is used.
func TestCheck(t *testing.T) {
	weak := newTestKey(t, 1023, 65537).pub
	with := func(e int) *rsa.PublicKey { return &rsa.PublicKey{N: weak.N, E: e} }
	big1024, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		pub *rsa.PublicKey
		ok  bool
	}{
		"1023 bits, e=65537":   {&weak, true},
		"e=3":                  {with(3), true},
		"e=1":                  {with(1), false},
		"e=2":                  {with(2), false},
		"e=65536":              {with(65536), false},
		"e=0":                  {with(0), false},
		"e=-3":                 {with(-3), false},
		"even modulus":         {&rsa.PublicKey{N: new(big.Int).Add(weak.N, big.NewInt(1)), E: 65537}, false},
		"1024 bits":            {&big1024.PublicKey, false},
		"too short for SHA256": {&newTestKey(t, 480, 65537).pub, false},
		"no modulus":           {&rsa.PublicKey{E: 65537}, false},
		"zero modulus":         {&rsa.PublicKey{N: new(big.Int), E: 65537}, false},
		"nil":                  {nil, false},
	} {
		err := Check(tc.pub)
		if tc.ok {
			require.NoError(t, err, name)
			continue
		}
		require.ErrorIs(t, err, ErrKey, name)
		digest := sha256.Sum256(nil)
		require.ErrorIs(t, VerifySHA256(tc.pub, digest[:], make([]byte, 128)), ErrKey, name)
	}
}

// TestE1Forgeable shows why an exponent of 1 is refused: the encoded block
// itself would verify.
func TestE1Forgeable(t *testing.T) {
	pub := &rsa.PublicKey{N: newTestKey(t, 1023, 65537).pub.N, E: 1}
	digest := sha256.Sum256([]byte("an event"))
	forged := encode(digest[:], size(pub))
	require.NoError(t, verify(pub, digest[:], forged), "without Check, e=1 accepts the block")
	require.ErrorIs(t, VerifySHA256(pub, digest[:], forged), ErrKey)
}
