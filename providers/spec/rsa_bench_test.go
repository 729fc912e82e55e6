package spec_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	fixturefile "github.com/webhookd/webhookd/providers/fixture"
	"github.com/webhookd/webhookd/providers/spec"
)

// BenchmarkRSAVerify compares, in one run, the built-in snap spec's Verify
// with the same check written by hand on crypto/rsa (compact the body,
// SHA-256 it, build the signed text, verify PKCS #1 v1.5), on the
// fixtures of fixtures/snap, which a 2048-bit test key signed: one op
// verifies each of them once. The spec's RSA verification should cost what
// crypto/rsa's does. Run:
//
//	go test -run '^$' -bench RSAVerify -count 10 ./providers/spec/ | benchstat -col /impl -
func BenchmarkRSAVerify(b *testing.B) {
	pubPEM, err := os.ReadFile("../../fixtures/snap/test-sender.pub.pem")
	require.NoError(b, err)
	specs, err := spec.Builtin()
	require.NoError(b, err)
	var snap *spec.Spec
	for _, s := range specs {
		if s.Name() == "snap" {
			snap = s
		}
	}
	require.NotNil(b, snap)
	p, err := snap.New([]string{string(pubPEM)}, nil, nil)
	require.NoError(b, err)
	blk, _ := pem.Decode(pubPEM)
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	require.NoError(b, err)
	key := pub.(*rsa.PublicKey)

	fixtures, err := fixturefile.Load([]string{"../../fixtures/snap"}, "")
	require.NoError(b, err)
	var deliveries []providers.Delivery
	for _, f := range fixtures {
		deliveries = append(deliveries, providers.Delivery{Header: f.Header, Body: f.Body})
	}
	require.NotEmpty(b, deliveries)
	ctx := context.Background()
	byHand := func(d providers.Delivery) error {
		var c bytes.Buffer
		if err := json.Compact(&c, d.Body); err != nil {
			return err
		}
		sum := sha256.Sum256(c.Bytes())
		var text strings.Builder
		text.WriteString("POST:/webhooks/snap:")
		text.WriteString(hex.EncodeToString(sum[:]))
		text.WriteString(":")
		text.WriteString(d.Header.Get("X-Timestamp"))
		sig, err := base64.StdEncoding.DecodeString(d.Header.Get("X-Signature"))
		if err != nil {
			return err
		}
		digest := sha256.Sum256([]byte(text.String()))
		return rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig)
	}
	for _, d := range deliveries {
		require.NoError(b, p.Verify(ctx, d))
		require.NoError(b, byHand(d))
	}
	b.Run("impl=crypto-rsa", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range deliveries {
				if err := byHand(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("impl=spec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range deliveries {
				if err := p.Verify(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
