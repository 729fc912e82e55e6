package weakrsa

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkVerify compares, in one run, a verification by this package
// under a 1023-bit key (Winpay's sandbox key's size) with crypto/rsa's
// under a 1024-bit key, the shortest it takes, and this package's under
// that same key: what a weak key's delivery costs beside a normal one's.
// Run:
//
//	go test -run '^$' -bench Verify -benchtime 2000x -count 10 -cpu 1 ./providers/internal/weakrsa/
func BenchmarkVerify(b *testing.B) {
	digest := sha256.Sum256([]byte("an event"))
	weak := newTestKey(b, 1023, 65537)
	weakSig := weak.raw(encode(digest[:], size(&weak.pub)))
	priv, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(b, err)
	sig, err := rsa.SignPKCS1v15(nil, priv, crypto.SHA256, digest[:])
	require.NoError(b, err)
	for _, bm := range []struct {
		name   string
		verify func() error
	}{
		{"impl=weakrsa/bits=1023", func() error { return VerifySHA256(&weak.pub, digest[:], weakSig) }},
		{"impl=weakrsa/bits=1024", func() error { return verify(&priv.PublicKey, digest[:], sig) }},
		{"impl=crypto-rsa/bits=1024", func() error { return rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, digest[:], sig) }},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bm.verify(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
