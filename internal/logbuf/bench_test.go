package logbuf_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhookd/webhookd/internal/logbuf"
)

// countWrites counts the Writes that reach the file: its write(2) calls.
type countWrites struct {
	f      *os.File
	writes atomic.Int64
}

func (c *countWrites) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.f.Write(p)
}

// BenchmarkSlogJSON logs the delivery line from parallel goroutines
// through slog's JSON handler into a file, written directly (one write(2)
// per line) and through a logbuf.Writer, which is closed inside the timed
// loop so that every line has reached the file. writes/op is write(2)
// calls per line.
//
//	go test -run '^$' -bench SlogJSON -benchmem -count 6 ./internal/logbuf/
func BenchmarkSlogJSON(b *testing.B) {
	tests := []struct {
		name string
		wrap func(io.Writer) (io.Writer, func() error)
	}{
		{"direct", func(w io.Writer) (io.Writer, func() error) { return w, func() error { return nil } }},
		{"logbuf", func(w io.Writer) (io.Writer, func() error) {
			lw := logbuf.New(w, 0)
			return lw, lw.Close
		}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			file := &countWrites{f: f}
			w, closeW := tt.wrap(file)
			h := slog.NewJSONHandler(w, nil)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// As receiver's logDelivery writes the delivery line.
					r := slog.NewRecord(time.Now(), slog.LevelInfo, "delivery", 0)
					r.AddAttrs(slog.String("provider", "stripe"), slog.String("key", "stripe:evt_1QcliTestInvoicePaid"),
						slog.String("type", "invoice.paid"), slog.String("outcome", "forwarded"), slog.Int("status", 201),
						slog.Duration("latency", 12*time.Millisecond), slog.Int("attempts", 1), slog.Int("downstream_status", 201),
						slog.Duration("downstream_latency", 11*time.Millisecond))
					_ = h.Handle(ctx, r)
				}
			})
			if err := closeW(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(file.writes.Load())/float64(b.N), "writes/op")
		})
	}
}
