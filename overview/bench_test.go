package overview_test

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/overview"
)

// BenchmarkObserve is the overview's share of one delivery's cost, alone
// and from every core at once (the receive path's goroutines):
//
//	go test ./overview -run '^$' -bench Observe -benchmem -count 6
//
// The whole receive path with and without it is
// BenchmarkDeliveryReport in package receiver.
func BenchmarkObserve(b *testing.B) {
	rec := overview.NewRecorder([]string{"stripe"}, nil)
	d := forwarded("stripe", 40*time.Millisecond)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rec.Observe(d)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rec.Observe(d)
			}
		})
	})
	// A record's line names its destination: its share is counted too.
	withDest := d
	withDest.Source, withDest.Destination = "stripe", "billing"
	b.Run("destination-serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rec.Observe(withDest)
		}
	})
	b.Run("destination-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rec.Observe(withDest)
			}
		})
	})
}
