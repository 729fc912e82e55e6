package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// FinishRecord returns the record exactly as stored (the tiered store
// copies it as its local copy), and only finishes a lease as COMPLETED or
// FAILED: any other state is refused and the lease left as it was.
func TestPostgresFinishRecord(t *testing.T) {
	dsn := testPostgresDSN(t)
	ctx := context.Background()
	s := openTestPG(t, dsn, testSchema(t, dsn), dedupe.Options{Lease: time.Minute, Retention: time.Hour})
	resp := dedupe.Response{Status: 202, ContentType: "text/plain", Body: []byte("accepted")}
	cases := []struct {
		state dedupe.State
		ok    bool
	}{
		{dedupe.Completed, true},
		{dedupe.Failed, true},
		{dedupe.InFlight, false},
		{dedupe.State(0), false},
	}
	for _, tc := range cases {
		t.Run(tc.state.String(), func(t *testing.T) {
			key := "stripe:evt_finish_" + tc.state.String()
			l, _, err := s.Claim(ctx, key, "fp", nil)
			require.NoError(t, err)
			rec, err := s.FinishRecord(ctx, l, tc.state, resp)
			stored, gerr := s.Get(ctx, key)
			require.NoError(t, gerr)
			if !tc.ok {
				require.Error(t, err)
				require.Equal(t, dedupe.InFlight, stored.State, "the lease is untouched")
				require.Equal(t, l.Token, stored.Token)
				return
			}
			require.NoError(t, err)
			require.Equal(t, stored, rec)
			require.Equal(t, tc.state, rec.State)
			require.Equal(t, resp, rec.Response)
			_, err = s.FinishRecord(ctx, l, tc.state, resp)
			require.ErrorIs(t, err, dedupe.ErrLeaseLost)
		})
	}
}
