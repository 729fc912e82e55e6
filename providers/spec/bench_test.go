package spec_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paddle"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/providers/stripe"
)

// BenchmarkVerifyParse compares, in one run, the hand-written Stripe
// adapter with builtin/stripe.yaml, the spec that replaced it, on
// the same signed deliveries (every fixture of fixtures/stripe): one op
// verifies and parses each of them once. The target is a spec within
// 1.2x the adapter's time per op (BENCHMARKS.md, "Provider specs"). Run:
//
//	go test -run '^$' -bench VerifyParse -count 10 ./providers/spec/ | benchstat -col /impl -
func BenchmarkVerifyParse(b *testing.B) {
	data, err := os.ReadFile("builtin/stripe.yaml")
	require.NoError(b, err)
	s, err := spec.Load("builtin/stripe.yaml", data)
	require.NoError(b, err)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	const secret = "whsec_bench"
	sp, err := s.New([]string{secret}, nil, clock)
	require.NoError(b, err)
	adapter, err := stripe.New([]string{secret}, 5*time.Minute, stripe.WithClock(clock))
	require.NoError(b, err)

	paths, err := filepath.Glob("../../fixtures/stripe/*.json")
	require.NoError(b, err)
	require.NotEmpty(b, paths)
	var deliveries []providers.Delivery
	size := 0
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(b, err)
		d, err := sp.Sign(body)
		require.NoError(b, err)
		deliveries = append(deliveries, d)
		size += len(body)
	}
	ctx := context.Background()

	b.Run("impl=stripe", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range deliveries {
				if err := adapter.Verify(ctx, d); err != nil {
					b.Fatal(err)
				}
				if _, err := adapter.Parse(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("impl=spec", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range deliveries {
				if err := sp.Verify(ctx, d); err != nil {
					b.Fatal(err)
				}
				if _, err := sp.Parse(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestPaddleBillingAgrees: the documented example spec (Paddle Billing)
// and the hand-written providers/paddle accept each other's signatures on
// every fixture of fixtures/paddle and derive the same events, fingerprints
// included.
func TestPaddleBillingAgrees(t *testing.T) {
	data, err := os.ReadFile("testdata/paddle-billing.yaml")
	require.NoError(t, err)
	s, err := spec.Load("testdata/paddle-billing.yaml", data)
	require.NoError(t, err)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	const secret = "pdl_ntfset_agree"
	sp, err := s.New([]string{secret}, nil, clock)
	require.NoError(t, err)
	adapter, err := paddle.New([]string{secret}, 5*time.Minute, paddle.WithClock(clock))
	require.NoError(t, err)
	paths, err := filepath.Glob("../../fixtures/paddle/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	ctx := context.Background()
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, signer := range []providers.Provider{sp, adapter} {
			d, err := signer.Sign(body)
			require.NoError(t, err)
			require.NoError(t, sp.Verify(ctx, d), p)
			require.NoError(t, adapter.Verify(ctx, d), p)
			want, err := adapter.Parse(d)
			require.NoError(t, err)
			got, err := sp.Parse(d)
			require.NoError(t, err)
			require.Equal(t, want, got, p)
		}
	}
}
