package paypal_test

import (
	"testing"

	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/providertest"
)

// BenchmarkParse measures Parse over every fixture of fixtures/paypal: one op
// parses each of them once. Parse needs no certificate, so the adapter has no
// test server. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/paypal/
func BenchmarkParse(b *testing.B) {
	a, err := paypal.New([]string{webhookID})
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchmarkParse(b, a, nil, fixtures)
}
