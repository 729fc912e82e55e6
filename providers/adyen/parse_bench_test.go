package adyen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/webhookd/webhookd/providers"
)

// BenchmarkParse measures what the receiver calls for an Adyen delivery,
// Parse, over every fixture of fixtures/adyen, the
// batch of three included: one op splits each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/adyen/
func BenchmarkParse(b *testing.B) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("fixtures in %s: %v", fixtures, err)
	}
	bodies := make([][]byte, len(paths))
	size := 0
	for i, p := range paths {
		if bodies[i], err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
		size += len(bodies[i])
	}
	a := newAdapter(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, body := range bodies {
			if _, err := a.Parse(providers.Delivery{Body: body}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
