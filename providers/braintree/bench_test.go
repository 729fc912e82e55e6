package braintree_test

import (
	"context"
	"testing"

	"github.com/webhookd/webhookd/providers"
	fixturefile "github.com/webhookd/webhookd/providers/fixture"
	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/braintree: one op
// parses each of them once. Run:
// go test -run '^$' -bench . -benchmem ./providers/braintree/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b, sdkKeys), nil, fixtures)
}

// BenchmarkVerify measures Verify over every fixture, signed: one op
// verifies each of them once.
func BenchmarkVerify(b *testing.B) {
	a := newAdapter(b, sdkKeys)
	loaded, err := fixturefile.Load([]string{fixtures}, "")
	if err != nil {
		b.Fatal(err)
	}
	var signed []providers.Delivery
	size := 0
	for _, f := range loaded {
		d, err := a.Sign(f.Body)
		if err != nil {
			b.Fatal(err)
		}
		signed = append(signed, d)
		size += len(d.Body)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range signed {
			if err := a.Verify(context.Background(), d); err != nil {
				b.Fatal(err)
			}
		}
	}
}
