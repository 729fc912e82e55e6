package spec

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"sync"
	"time"
)

// testSenders are the two RSA-2048 key pairs of testdata/snap-sender-*:
// test keys, made for webhookd's tests (the snap example and the
// fixtures of fixtures/snap and fixtures/winpay are signed with a), never
// any gateway's.
var testSenders = sync.OnceValue(func() map[string]crypto.Signer {
	out := map[string]crypto.Signer{}
	for _, name := range []string{"a", "b"} {
		pub, err := os.ReadFile("testdata/snap-sender-" + name + ".pub.pem")
		if err != nil {
			panic(err)
		}
		data, err := os.ReadFile("testdata/snap-sender-" + name + ".key.pem")
		if err != nil {
			panic(err)
		}
		b, _ := pem.Decode(data)
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			panic(err)
		}
		out[string(pub)] = k.(crypto.Signer)
	}
	return out
})

// testSenderPEM is the public key of test sender a or b: the one a name
// ending in "b" picks, else a.
func testSenderPEM(name string) string {
	which := "a"
	if strings.HasSuffix(name, "b") {
		which = "b"
	}
	pub, err := os.ReadFile("testdata/snap-sender-" + which + ".pub.pem")
	if err != nil {
		panic(err)
	}
	return string(pub)
}

// newTest is s.New for the tests: a public-key spec's Provider also signs,
// with the private key of its first secret when that is a test sender's.
func newTest(s *Spec, secrets []string, settings map[string]string, clock func() time.Time, opts ...Option) (*Provider, error) {
	p, err := s.New(secrets, settings, clock, opts...)
	if err != nil || p.keys == nil || len(secrets) == 0 {
		return p, err
	}
	p.signer = testSenders()[secrets[0]]
	return p, nil
}
