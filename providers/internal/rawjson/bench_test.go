package rawjson_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// BenchmarkParse compares rawjson.Parse (which also refuses duplicate names
// and records offsets) with a plain encoding/json decode into a map of raw
// members, the way the Stripe adapter reads a body, on one fixture per
// provider. Run: go test -bench Parse -benchmem ./providers/internal/rawjson/
func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"stripe/charge_refunded.json", "midtrans/bank_transfer_settlement.json", "xendit/payment_succeeded.json"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/rawjson.Parse", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := rawjson.Parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/json.Unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(body, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckNamesFixtures measures the name check on one fixture per
// provider, indented as the providers send them. Run:
// go test -run '^$' -bench CheckNames -benchmem ./providers/internal/rawjson/
func BenchmarkCheckNamesFixtures(b *testing.B) {
	for _, name := range []string{"stripe/charge_refunded.json", "paypal/payment_capture_completed.json", "xendit/payment_succeeded.json"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := rawjson.CheckNames(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
