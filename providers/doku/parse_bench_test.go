package doku_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/doku: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/doku/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b, vecTime), nil, "../../fixtures/doku")
}
