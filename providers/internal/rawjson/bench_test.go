package rawjson_test

import (
	"bytes"
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

// BenchmarkAppendCompact measures AppendCompact on the data member of an
// indented Stripe event, most of its body: what the Stripe adapter hashes.
// Run: go test -run '^$' -bench AppendCompact -benchmem ./providers/internal/rawjson/
func BenchmarkAppendCompact(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", "stripe", "charge_refunded.json"))
	if err != nil {
		b.Fatal(err)
	}
	o, err := rawjson.Parse(body)
	if err != nil {
		b.Fatal(err)
	}
	data, ok, err := o.Get("data")
	if err != nil || !ok {
		b.Fatal("no data member", err)
	}
	var buf bytes.Buffer
	b.SetBytes(int64(len(data.Value)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		data.AppendCompact(&buf)
	}
}
