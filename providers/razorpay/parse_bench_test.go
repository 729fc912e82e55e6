package razorpay_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkParse measures Parse over every fixture of fixtures/razorpay: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/razorpay/
func BenchmarkParse(b *testing.B) {
	paths, err := filepath.Glob("../../fixtures/razorpay/*.json")
	require.NoError(b, err)
	require.NotEmpty(b, paths)
	bodies := make([][]byte, len(paths))
	size := 0
	for i, p := range paths {
		bodies[i], err = os.ReadFile(p)
		require.NoError(b, err)
		size += len(bodies[i])
	}
	a := newAdapter(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, body := range bodies {
			if _, err := a.Parse(body); err != nil {
				b.Fatal(err)
			}
		}
	}
}
