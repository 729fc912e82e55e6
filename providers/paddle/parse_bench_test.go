package paddle_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/paddle: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/paddle/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b, at(vecGoTS, 0), vecGoSecret), nil, "../../fixtures/paddle")
}
