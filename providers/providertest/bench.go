package providertest

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// BenchmarkParse measures how p derives the event of every fixture in dir
// (the *.json files, as Run reads them): one op parses each of them once,
// through Parse with header, so that an adapter keyed by a header
// (Standard Webhooks') is measured too; header is nil for
// adapters that key on the body. The bytes per op are the fixtures' total
// size. An adapter's benchmark is one call:
//
//	func BenchmarkParse(b *testing.B) {
//		providertest.BenchmarkParse(b, newAdapter(b), nil, "../../fixtures/stripe")
//	}
func BenchmarkParse(b *testing.B, p providers.Provider, header http.Header, dir string) {
	b.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(b, err)
	paths = slices.DeleteFunc(paths, func(p string) bool { return strings.HasSuffix(p, HeadersSuffix) })
	require.NotEmpty(b, paths, "fixtures in %s", dir)
	bodies := make([][]byte, len(paths))
	size := 0
	for i, path := range paths {
		bodies[i], err = os.ReadFile(path)
		require.NoError(b, err)
		size += len(bodies[i])
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, body := range bodies {
			if _, err := p.Parse(providers.Delivery{Header: header, Body: body}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
