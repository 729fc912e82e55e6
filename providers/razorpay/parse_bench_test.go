package razorpay_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/razorpay: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/razorpay/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b), nil, "../../fixtures/razorpay")
}
