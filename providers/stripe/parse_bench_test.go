package stripe_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/stripe: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/stripe/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b, vecNow), nil, "../../fixtures/stripe")
}
