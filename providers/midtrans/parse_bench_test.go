package midtrans_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/midtrans: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/midtrans/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b, "bench-server-key"), nil, "../../fixtures/midtrans")
}
