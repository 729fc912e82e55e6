package providertest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	fixturefile "github.com/webhookd/webhookd/providers/fixture"
)

// BenchmarkParse measures how p derives the event of every fixture in dir
// (read as Run reads them): one op parses each of them once, with header,
// so that an adapter keyed by a header (Standard Webhooks') is measured
// too; header is nil for adapters that key on the body. The bytes per op
// are the fixtures' total size. An adapter's benchmark is one call:
//
//	func BenchmarkParse(b *testing.B) {
//		providertest.BenchmarkParse(b, newAdapter(b), nil, "../../fixtures/acme")
//	}
func BenchmarkParse(b *testing.B, p providers.Provider, header http.Header, dir string) {
	b.Helper()
	fixtures, err := fixturefile.Load([]string{dir}, "")
	require.NoError(b, err)
	size := 0
	for _, f := range fixtures {
		size += len(f.Body)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range fixtures {
			if _, err := p.Parse(providers.Delivery{Header: header, Body: f.Body}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
