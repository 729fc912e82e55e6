package receiver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dispatch"
)

// nopHandler is a log handler enabled from level on that keeps nothing, so
// that what remains of a line's cost is the receiver's and slog's.
type nopHandler struct{ level slog.Level }

func (n nopHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= n.level }
func (nopHandler) Handle(context.Context, slog.Record) error      { return nil }
func (n nopHandler) WithAttrs([]slog.Attr) slog.Handler           { return n }
func (n nopHandler) WithGroup(string) slog.Handler                { return n }

// reportedDelivery has every field of the delivery line set: a core
// service's 422 after a forward that met an error reading the body.
func reportedDelivery(now time.Time) *delivery {
	return &delivery{start: now.Add(-5 * time.Millisecond), Delivery: Delivery{
		Provider: "stripe", Key: "stripe:evt_1", Type: "charge.succeeded", Outcome: OutcomeCoreRejected,
		Status: http.StatusUnprocessableEntity, RejectedBy: RejectedByCore,
		Dispatch: &dispatch.Result{Outcome: dispatch.Rejected, Status: http.StatusUnprocessableEntity, Attempts: 2,
			Duration: 3 * time.Millisecond, Err: errors.New("reading body: unexpected EOF")},
	}}
}

// TestDeliveryLineFormat pins the delivery line, field by field and in
// order, as docs/operating.md documents it.
func TestDeliveryLineFormat(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	h := &handler{Config: Config{Logger: logger, Now: func() time.Time { return now }}}
	h.report(reportedDelivery(now))
	require.Equal(t, `{"level":"INFO","msg":"delivery","provider":"stripe","key":"stripe:evt_1","type":"charge.succeeded",`+
		`"outcome":"core_rejected","status":422,"latency":5000000,"rejected_by":"core","attempts":2,"downstream_status":422,`+
		`"downstream_latency":3000000,"downstream_error":"reading body: unexpected EOF"}`+"\n", buf.String())
}

// TestDeliveryLineAllocations: a delivery line below the logger's level
// costs no allocation at all, and one that is written costs at most the one
// slog itself makes (a Record holds five attributes inline and puts the
// rest in one array).
func TestDeliveryLineAllocations(t *testing.T) {
	skipUnderRace(t)
	now := time.Now()
	for _, tt := range []struct {
		name  string
		level slog.Level
		max   float64
	}{
		{"disabled", slog.LevelWarn, 0},
		{"enabled", slog.LevelInfo, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &handler{Config: Config{Logger: slog.New(nopHandler{tt.level}), Now: time.Now}}
			d := reportedDelivery(now)
			allocs := testing.AllocsPerRun(100, func() { h.report(d) })
			require.LessOrEqual(t, allocs, tt.max)
		})
	}
}

// recordHandler keeps the records it is given.
type recordHandler struct{ records *[]slog.Record }

func (recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	*h.records = append(*h.records, r.Clone())
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// TestDeliveryLineSkipsTheCallerLookup: the delivery line's record carries
// no program counter, so runtime.Callers is not paid on every delivery for
// a source location no webhookd handler prints.
func TestDeliveryLineSkipsTheCallerLookup(t *testing.T) {
	var records []slog.Record
	h := &handler{Config: Config{Logger: slog.New(recordHandler{&records}), Now: time.Now}}
	h.report(reportedDelivery(time.Now()))
	require.Len(t, records, 1)
	require.Equal(t, "delivery", records[0].Message)
	require.Zero(t, records[0].PC)
	require.Equal(t, 11, records[0].NumAttrs())
}

// BenchmarkDeliveryLine measures the delivery line alone, written by the
// JSON handler production uses (to io.Discard) or disabled by the level:
//
//	go test ./receiver -run '^$' -bench DeliveryLine -benchmem -count 5
func BenchmarkDeliveryLine(b *testing.B) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		name := map[slog.Level]string{slog.LevelInfo: "written", slog.LevelWarn: "disabled"}[level]
		b.Run(name, func(b *testing.B) {
			logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: level}))
			h := &handler{Config: Config{Logger: logger, Now: time.Now}}
			d := reportedDelivery(time.Now())
			b.ReportAllocs()
			for b.Loop() {
				h.report(d)
			}
		})
	}
}
