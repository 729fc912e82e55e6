package dedupe

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryDelay(t *testing.T) {
	for attempt, want := range map[int]time.Duration{
		0: 50 * time.Millisecond, 1: 50 * time.Millisecond, 2: 100 * time.Millisecond,
		5: 800 * time.Millisecond, 6: time.Second, 1000: time.Second,
	} {
		require.Equal(t, want, RetryDelay(attempt), "attempt %d", attempt)
	}
}

// TestUnsettledRetry: an answer is written again while its write fails
// retryably and its lease runs, and its key is held from the first failure
// to the last attempt.
func TestUnsettledRetry(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Now()
	down := errors.New("store down")
	for _, tc := range []struct {
		name  string
		a     WriteAttempt
		retry bool
	}{
		{"first failure", WriteAttempt{Tries: 0, Until: now.Add(time.Second), Err: down, Retryable: true}, true},
		{"failing again", WriteAttempt{Tries: 3, Until: now.Add(time.Second), Err: down, Retryable: true}, true},
		{"landed", WriteAttempt{Tries: 0, Until: now.Add(time.Second), Landed: true}, false},
		{"landed on a retry", WriteAttempt{Tries: 2, Until: now.Add(time.Second), Landed: true}, false},
		{"lease gone", WriteAttempt{Tries: 2, Until: now.Add(time.Second)}, false},
		{"refused", WriteAttempt{Tries: 0, Until: now.Add(time.Second), Err: down}, false},
		{"lease passed", WriteAttempt{Tries: 2, Until: now, Err: down, Retryable: true}, false},
		{"no lease", WriteAttempt{Tries: 0, Err: down, Retryable: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u Unsettled
			tc.a.Key = "k"
			if tc.a.Tries > 0 {
				u.Hold("k") // held by the earlier attempts
			}
			ran := make(chan struct{}, 1)
			require.Equal(t, tc.retry, u.Retry(tc.a, now, logger, func() { ran <- struct{}{} }))
			require.Equal(t, tc.retry, u.Holds("k"))
			require.False(t, u.Holds("other"))
			if tc.retry {
				<-ran // the resend runs after RetryDelay
				u.Drop("k")
			}
			require.Zero(t, u.Len())
		})
	}
}

// TestUnsettledFlush: Flush runs at once what waits for its time, and
// refuses later retries, dropping their keys.
func TestUnsettledFlush(t *testing.T) {
	var u Unsettled
	ran := 0
	require.True(t, u.After(time.Hour, func() { ran++ }))
	start := time.Now()
	u.Flush()
	require.Equal(t, 1, ran)
	require.Less(t, time.Since(start), time.Minute)
	require.False(t, u.After(0, func() { ran++ }))
	a := WriteAttempt{Key: "k", Until: time.Now().Add(time.Hour), Err: errors.New("down"), Retryable: true}
	require.False(t, u.Retry(a, time.Now(), slog.New(slog.NewTextHandler(io.Discard, nil)), func() { ran++ }))
	require.False(t, u.Holds("k"))
	require.Equal(t, 1, ran)
}
