package weakrsa

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzVerify checks that, for any signature bytes, verify and crypto/rsa
// agree on a 1024-bit key (the shortest crypto/rsa takes by default), and
// that under a 1023-bit key nothing but the one signature verifies.
func FuzzVerify(f *testing.F) {
	priv, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(f, err)
	weak := newTestKey(f, 1023, 65537)
	digest := sha256.Sum256([]byte("an event"))
	sig, err := rsa.SignPKCS1v15(nil, priv, crypto.SHA256, digest[:])
	require.NoError(f, err)
	good := weak.raw(encode(digest[:], size(&weak.pub)))
	f.Add(sig)
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, s []byte) {
		want := rsa.VerifyPKCS1v15(&priv.PublicKey, crypto.SHA256, digest[:], s) == nil
		require.Equal(t, want, verify(&priv.PublicKey, digest[:], s) == nil, "1024 bits: crypto/rsa says %v", want)
		if VerifySHA256(&weak.pub, digest[:], s) == nil {
			require.Equal(t, good, s, "1023 bits: only the signature of the digest verifies")
		}
	})
}
