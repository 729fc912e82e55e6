package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
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

// ClaimOver answers a caller holding a copy of the finished record: the
// row unchanged since the copy comes back without its response body, which
// the copy holds; a row that changed comes back whole, as Claim returns
// it; a row that is gone is claimed afresh.
func TestPostgresClaimOverLeavesOutTheCopiedBody(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	s := openTestPG(t, dsn, pgtest.Schema(t, dsn), dedupe.Options{Lease: time.Minute, Retention: time.Hour})
	resp := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	finished := func(t *testing.T, key string) dedupe.Record {
		l, _, err := s.Claim(ctx, key, "fp", nil)
		require.NoError(t, err)
		rec, err := s.FinishRecord(ctx, l, dedupe.Completed, resp)
		require.NoError(t, err)
		return rec
	}
	cases := []struct {
		name     string
		copiedAt func(rec dedupe.Record) time.Time
		before   func(t *testing.T, key string)
		wantBody []byte // nil: left out
		claimed  bool
	}{
		{name: "unchanged", copiedAt: func(r dedupe.Record) time.Time { return r.UpdatedAt }},
		{name: "changed since the copy", copiedAt: func(r dedupe.Record) time.Time { return r.UpdatedAt.Add(-time.Microsecond) },
			wantBody: resp.Body},
		{name: "no copy", copiedAt: func(dedupe.Record) time.Time { return time.Time{} }, wantBody: resp.Body},
		{name: "deleted since the copy", copiedAt: func(r dedupe.Record) time.Time { return r.UpdatedAt },
			before: func(t *testing.T, key string) { require.NoError(t, s.Delete(ctx, key)) }, claimed: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("stripe:evt_over%d", i)
			rec := finished(t, key)
			if tc.before != nil {
				tc.before(t, key)
			}
			l, got, err := s.ClaimOver(ctx, key, "fp", nil, tc.copiedAt(rec))
			require.NoError(t, err)
			if tc.claimed {
				require.Nil(t, got)
				require.NotZero(t, l.Token)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, rec.UpdatedAt, got.UpdatedAt)
			require.Equal(t, dedupe.Completed, got.State)
			require.Equal(t, resp.Status, got.Response.Status)
			require.Equal(t, tc.wantBody, got.Response.Body)
		})
	}
}
