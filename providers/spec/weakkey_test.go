package spec

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// TestWeakKeyLeavesProcessDefault: Winpay's 1023-bit sandbox key, allowed
// by its spec's setting, verifies Winpay's published callback while
// crypto/rsa, in the same process, still refuses that key as Go's default
// does: the allowance is the spec's, not a GODEBUG that would weaken
// every RSA operation (TLS included).
func TestWeakKeyLeavesProcessDefault(t *testing.T) {
	s := builtinSpec(t, "winpay")
	ex := exampleNamed(t, s, "winpay-published-callback")
	p, err := s.New([]string{ex.secret}, ex.settings, func() time.Time { return ex.now })
	require.NoError(t, err)
	require.NoError(t, p.Verify(context.Background(), providers.Delivery{Header: ex.header, Body: ex.body, Path: ex.path}))

	require.Len(t, p.keys, 1)
	require.True(t, p.keys[0].weak)
	sig, err := base64.StdEncoding.DecodeString(ex.header.Get("X-Signature"))
	require.NoError(t, err)
	digest := sha256.Sum256([]byte("any text"))
	err = rsa.VerifyPKCS1v15(p.keys[0].rsa, crypto.SHA256, digest[:], sig)
	require.ErrorContains(t, err, "insecure", "crypto/rsa keeps refusing keys under 1024 bits")
}

// TestWeakKeyUnusable: an allowed weak key that cannot be an RSA
// signer's (an exponent of 1, which makes any encoded block its own
// signature; an even one) is refused when the spec is built, naming the
// size.
func TestWeakKeyUnusable(t *testing.T) {
	s := builtinSpec(t, "winpay")
	ex := exampleNamed(t, s, "winpay-published-callback")
	b, _ := pem.Decode([]byte(ex.secret))
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	require.NoError(t, err)
	n := pub.(*rsa.PublicKey).N
	for _, tc := range []struct {
		name string
		key  *rsa.PublicKey
	}{
		{"e=1", &rsa.PublicKey{N: n, E: 1}},
		{"e=4", &rsa.PublicKey{N: n, E: 4}},
		{"even modulus", &rsa.PublicKey{N: new(big.Int).Add(n, big.NewInt(1)), E: 65537}},
	} {
		der, err := x509.MarshalPKIXPublicKey(tc.key)
		require.NoError(t, err, tc.name)
		text := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		_, err = s.New([]string{text}, ex.settings, nil)
		require.ErrorIs(t, err, ErrWeakKey, tc.name)
		require.ErrorContains(t, err, "(1023 bits)", tc.name)
	}
}
