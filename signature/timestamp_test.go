package signature_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/signature"
)

func TestCheckTimestamp(t *testing.T) {
	now := time.Unix(1700000000, 0)
	const tol = 5 * time.Minute
	tests := []struct {
		name      string
		ts        time.Time
		tolerance time.Duration
		wantErr   error
	}{
		{"same instant", now, tol, nil},
		{"just inside", now.Add(-tol + time.Second), tol, nil},
		{"exactly at the tolerance", now.Add(-tol), tol, nil},
		{"one second too old", now.Add(-tol - time.Second), tol, signature.ErrTooOld},
		{"a day old", now.Add(-24 * time.Hour), tol, signature.ErrTooOld},
		{"zero time", time.Time{}, tol, signature.ErrTooOld},
		{"unix epoch", time.Unix(0, 0), tol, signature.ErrTooOld},
		{"most negative unix seconds", time.Unix(math.MinInt64, 0), tol, signature.ErrTooOld},
		{"future is accepted", now.Add(time.Hour), tol, nil},
		{"year 9999 is accepted", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), tol, nil},
		// time.Unix overflows its internal representation for seconds this
		// large and wraps into the distant past: the check fails closed.
		{"max int64 unix seconds wraps to too old", time.Unix(math.MaxInt64, 0), tol, signature.ErrTooOld},
		{"zero tolerance fails closed", now, 0, signature.ErrInvalidTolerance},
		{"negative tolerance fails closed", now, -time.Second, signature.ErrInvalidTolerance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := signature.CheckTimestamp(tt.ts, now, tt.tolerance)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}
