package razorpay_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/razorpay"
)

// BenchmarkParse measures Parse over every fixture of fixtures/razorpay: one op
// parses each of them once. Run:
// go test -run '^$' -bench Parse -benchmem ./providers/razorpay/
func BenchmarkParse(b *testing.B) {
	providertest.BenchmarkParse(b, newAdapter(b), nil, "../../fixtures/razorpay")
}

// BenchmarkVerify measures Verify of one fixture without and with the age
// check, which serve now always runs (WEBHOOKD_RETENTION bounds created_at
// when WEBHOOKD_RAZORPAY_MAX_AGE is unset). Run:
// go test -run '^$' -bench Verify -benchmem ./providers/razorpay/
func BenchmarkVerify(b *testing.B) {
	body := readFixture(b, "payment_captured.json")
	d := providers.Delivery{Header: http.Header{razorpay.HeaderName: {razorpay.SignatureHeader("bench_secret", body)}}, Body: body}
	created := time.Unix(1773480125, 0) // the fixture's created_at
	for _, bc := range []struct {
		name string
		opts []razorpay.Option
	}{
		{"unbounded", nil},
		{"retention", []razorpay.Option{razorpay.WithMaxAge(168*time.Hour, func() time.Time { return created.Add(time.Hour) })}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, err := razorpay.New([]string{"bench_secret"}, bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Verify(context.Background(), d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
