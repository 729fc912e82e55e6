package xendit_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/xendit: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/xendit/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b), nil, "../../fixtures/xendit")
}
