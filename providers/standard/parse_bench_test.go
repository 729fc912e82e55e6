package standard_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of
// fixtures/standard: one op parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/standard/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b, vecNow), idHeader("msg_bench"), "../../fixtures/standard")
}
