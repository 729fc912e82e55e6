package dedupetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// requestLogCases check the request log (dedupe.RequestLog), which every
// backend keeps beside its records.
func requestLogCases() []kitCase {
	ctx := context.Background()
	entry := func(clock *Clock, i int, outcome, reason string) dedupe.LoggedRequest {
		return dedupe.LoggedRequest{Time: clock.Now(), Source: "stripe", Provider: "stripe", Outcome: outcome, Reason: reason,
			Status: 401, Size: int64(i), RemoteAddr: "192.0.2.1:5000"}
	}
	log := func(t *testing.T, s dedupe.Store) dedupe.RequestLog {
		l, ok := s.(dedupe.RequestLog)
		require.True(t, ok, "%T keeps no request log", s)
		return l
	}
	all := func(t *testing.T, l dedupe.RequestLog, f dedupe.RequestFilter) []dedupe.LoggedRequest {
		var out []dedupe.LoggedRequest
		for range 100 {
			page, next, err := l.ListRequests(ctx, f)
			require.NoError(t, err)
			out = append(out, page...)
			if next == "" {
				return out
			}
			f.After = next
		}
		t.Fatal("the pages never end")
		return nil
	}
	big := dedupe.RequestLogBounds{Size: 1000, Age: time.Hour}
	return []kitCase{
		{"request log: newest first, filtered, in pages", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l := log(t, s)
			var batch []dedupe.LoggedRequest
			for i := range 7 {
				clock.Advance(time.Millisecond)
				e := entry(clock, i, "unauthorized", "signature_invalid")
				if i%2 == 0 {
					e.Outcome, e.Reason, e.Status, e.EventKey, e.Type = "forwarded", "", 200, fmt.Sprintf("evt_%d", i), "charge.succeeded"
				}
				batch = append(batch, e)
			}
			require.NoError(t, l.AppendRequests(ctx, batch[:3], big))
			require.NoError(t, l.AppendRequests(ctx, batch[3:], big))

			got := all(t, l, dedupe.RequestFilter{Limit: 2})
			require.Len(t, got, 7)
			for i, e := range got {
				want := batch[6-i]
				require.NotEmpty(t, e.ID)
				e.ID = ""
				require.True(t, want.Time.Equal(e.Time), "entry %d: %s, want %s", i, e.Time, want.Time)
				e.Time = want.Time
				require.Equal(t, want, e, "newest first")
			}
			forwarded := all(t, l, dedupe.RequestFilter{Outcome: "forwarded", Limit: 3})
			require.Len(t, forwarded, 4)
			require.Equal(t, "evt_6", forwarded[0].EventKey)
			require.Len(t, all(t, l, dedupe.RequestFilter{Reason: "signature_invalid"}), 3)
			require.Empty(t, all(t, l, dedupe.RequestFilter{Source: "paddle"}))

			_, _, err := l.ListRequests(ctx, dedupe.RequestFilter{After: "not a cursor"})
			require.ErrorIs(t, err, dedupe.ErrInvalidCursor)
		}},
		{"request log: bounded by count and age", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l := log(t, s)
			b := dedupe.RequestLogBounds{Size: 5, Age: time.Hour}
			for i := range 4 {
				var batch []dedupe.LoggedRequest
				for j := range 3 {
					clock.Advance(time.Millisecond)
					batch = append(batch, entry(clock, i*3+j, "unauthorized", "signature_missing"))
				}
				require.NoError(t, l.AppendRequests(ctx, batch, b))
			}
			got := all(t, l, dedupe.RequestFilter{})
			require.Len(t, got, 5, "a flood only pushes older entries out")
			require.Equal(t, int64(11), got[0].Size)
			require.Equal(t, int64(7), got[4].Size)

			clock.Advance(2 * time.Hour)
			require.NoError(t, l.AppendRequests(ctx, []dedupe.LoggedRequest{entry(clock, 99, "forwarded", "")}, b))
			got = all(t, l, dedupe.RequestFilter{})
			require.Len(t, got, 1, "entries older than the age are gone")
			require.Equal(t, int64(99), got[0].Size)
		}},
	}
}
