package postgres

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// A replay and an in-flight answer only read: the claim statement, which
// locks the row (setting its xmax) even when it changes nothing, is not
// run for them.
func TestPostgresClaimReadsBeforeItLocks(t *testing.T) {
	s, _, admin := proxiedPG(t, DefaultOpTimeout)
	ctx := context.Background()
	xmax := func(key string) string {
		var x string
		require.NoError(t, admin.QueryRow(ctx, `SELECT xmax::text FROM `+Table+` WHERE key = $1`, key).Scan(&x))
		return x
	}
	l, _, err := s.Claim(ctx, "stripe:evt_done", "fp", nil)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, l, dedupe.Response{Status: 200}))
	_, _, err = s.Claim(ctx, "stripe:evt_running", "fp", nil)
	require.NoError(t, err)
	require.Equal(t, "0", xmax("stripe:evt_done"))
	require.Equal(t, "0", xmax("stripe:evt_running"))

	_, rec, err := s.Claim(ctx, "stripe:evt_done", "fp", nil)
	require.NoError(t, err)
	require.NotNil(t, rec)
	_, _, err = s.Claim(ctx, "stripe:evt_running", "fp", nil)
	require.ErrorIs(t, err, dedupe.ErrInFlight)
	require.Equal(t, "0", xmax("stripe:evt_done"), "the replay locked the row")
	require.Equal(t, "0", xmax("stripe:evt_running"), "the in-flight answer locked the row")
}
