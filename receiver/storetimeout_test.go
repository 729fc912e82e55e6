package receiver_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/receiver"
)

// stuckStore is a store whose writes stop answering while stuck is set, as
// the LMDB writer's do when fsync never returns: they wait until their
// context ends (dedupe.TestStuckCommitHonoursTheDeadline shows the writer
// does so).
type stuckStore struct {
	receiver.Store
	claims, finishes atomic.Bool
}

func wait(ctx context.Context, stuck *atomic.Bool) error {
	if !stuck.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *stuckStore) Claim(ctx context.Context, key, fp string, req *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	if err := wait(ctx, &s.claims); err != nil {
		return dedupe.Lease{}, nil, err
	}
	return s.Store.Claim(ctx, key, fp, req)
}

func (s *stuckStore) Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	if err := wait(ctx, &s.finishes); err != nil {
		return err
	}
	return s.Store.Complete(ctx, l, resp)
}

// TestStuckStoreAnswers503InTime: a store that stops answering costs a
// delivery StoreTimeout and a 503 with Retry-After, and /readyz says so;
// nothing is forwarded without a claim. A record that cannot be written
// after the forward does not change the downstream's answer.
func TestStuckStoreAnswers503InTime(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var stuck *stuckStore
	h := newHarness(t, func(h *harness) {
		h.config = func(c *receiver.Config) {
			stuck = &stuckStore{Store: c.Store}
			c.Store, c.StoreTimeout = stuck, timeout
			ping := c.Ready
			c.Ready = func(ctx context.Context) error {
				if err := wait(ctx, &stuck.claims); err != nil {
					return err
				}
				return ping(ctx)
			}
		}
	})
	readyz := func() int {
		resp, err := http.Get(h.srv.URL + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	stuck.claims.Store(true)
	start := time.Now()
	r := h.deliver(event("evt_stuck", 1))
	require.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
	require.Less(t, time.Since(start), 10*timeout)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.JSONEq(t, `{"error":"store unavailable"}`, r.body)
	require.Zero(t, h.down.calls.Load(), "nothing forwarded without a claim")
	require.Equal(t, http.StatusServiceUnavailable, readyz())

	stuck.claims.Store(false)
	require.Equal(t, http.StatusOK, readyz())
	stuck.finishes.Store(true)
	r = h.deliver(event("evt_late_record", 1))
	require.Equal(t, http.StatusCreated, r.status, "the downstream's answer stands: %s", r.body)
	require.Equal(t, int32(1), h.down.calls.Load())
	require.Equal(t, dedupe.InFlight, h.state("stripe:evt_late_record"), "its claim expires with its lease")
}
