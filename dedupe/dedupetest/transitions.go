package dedupetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// transitionCases are the kit's cases of a claim and the three ways it ends:
// replay, takeover, release, delete, prune, and a settle whose caller is gone.
func transitionCases() []kitCase {
	ctx, key, fp, ok := fixture()
	return []kitCase{
		{"claim, in flight, mismatch", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, rec, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Nil(t, rec)
			require.NotZero(t, l.Token)
			require.Equal(t, clock.Now().Add(time.Minute), l.Until)
			_, rec, err = s.Claim(ctx, key, fp, nil)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
			require.Equal(t, l.Until, rec.LeaseUntil)
			_, _, err = s.Claim(ctx, key, "fp-b", nil)
			require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch)
			_, _, err = s.Claim(ctx, "", fp, nil)
			require.ErrorIs(t, err, dedupe.ErrInvalidKey)
		}},
		{"complete then replay", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, _, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			for range 2 {
				_, rec, err := s.Claim(ctx, key, fp, nil)
				require.NoError(t, err)
				require.Equal(t, dedupe.Completed, rec.State)
				require.Equal(t, ok, rec.Response)
			}
			_, rec, err := s.Claim(ctx, key, "fp-b", nil)
			require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch)
			require.NotNil(t, rec)
			require.ErrorIs(t, s.Complete(ctx, l, ok), dedupe.ErrLeaseLost, "a second Complete")
			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, uint32(1), got.Attempts)
			require.Equal(t, clock.Now().Add(2*time.Hour), got.ExpiresAt)
			require.Zero(t, got.Token)
		}},
		{"fail then replay, body capped", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, _, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			big := bytes.Repeat([]byte("x"), dedupe.MaxStoredBody+10)
			require.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 422, Body: big}))
			_, rec, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, rec.State)
			require.Equal(t, 422, rec.Response.Status)
			require.Len(t, rec.Response.Body, dedupe.MaxStoredBody)
		}},
		{"release frees the key", func(t *testing.T, s dedupe.Store, clock *Clock) {
			l, _, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, l))
			require.ErrorIs(t, s.Release(ctx, l), dedupe.ErrLeaseLost)
			_, err = s.Get(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrNotFound)
			l2, rec, err := s.Claim(ctx, key, "fp-b", nil)
			require.NoError(t, err, "a released key is new again, whatever its payload")
			require.Nil(t, rec)
			require.NotEqual(t, l.Token, l2.Token)
		}},
		{"takeover after the lease; the late finisher loses", func(t *testing.T, s dedupe.Store, clock *Clock) {
			old, _, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			clock.Advance(59 * time.Second)
			_, _, err = s.Claim(ctx, key, fp, nil)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
			clock.Advance(time.Second)
			_, _, err = s.Claim(ctx, key, "fp-b", nil)
			require.ErrorIs(t, err, dedupe.ErrFingerprintMismatch, "no takeover by another payload")
			cur, _, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.NotEqual(t, old.Token, cur.Token)
			require.ErrorIs(t, s.Complete(ctx, old, ok), dedupe.ErrLeaseLost)
			require.ErrorIs(t, s.Fail(ctx, old, ok), dedupe.ErrLeaseLost)
			require.ErrorIs(t, s.Release(ctx, old), dedupe.ErrLeaseLost)
			rec, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.InFlight, rec.State)
			require.Equal(t, uint32(2), rec.Attempts)
			require.NoError(t, s.Complete(ctx, cur, ok))
		}},
		{"delete refuses a live claim", func(t *testing.T, s dedupe.Store, clock *Clock) {
			require.ErrorIs(t, s.Delete(ctx, key), dedupe.ErrNotFound)
			l, _, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.ErrorIs(t, s.Delete(ctx, key), dedupe.ErrInFlight)
			require.NoError(t, s.ForceDelete(ctx, key))
			require.ErrorIs(t, s.Complete(ctx, l, ok), dedupe.ErrLeaseLost)
			_, _, err = s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			clock.Advance(time.Minute)
			require.NoError(t, s.Delete(ctx, key), "a claim past its lease is deletable")
			l, _, err = s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			require.NoError(t, s.Delete(ctx, key))
			_, rec, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Nil(t, rec, "a deleted event is forwarded again")
		}},
		{"prune deletes exactly what expired", func(t *testing.T, s dedupe.Store, clock *Clock) {
			finish := func(k string) {
				l, _, err := s.Claim(ctx, k, fp, nil)
				require.NoError(t, err)
				require.NoError(t, s.Complete(ctx, l, ok))
			}
			for i := range 3 {
				finish(fmt.Sprintf("stripe:old%d", i))
			}
			clock.Advance(time.Hour)
			finish("stripe:new0")
			finish("stripe:new1")
			_, _, err := s.Claim(ctx, "stripe:running", fp, nil) // expires at lease+1h abandon
			require.NoError(t, err)
			n, err := s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Zero(t, n)
			clock.Advance(time.Hour) // old ones expire now, exactly
			n, err = s.Prune(ctx, 2)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			n, err = s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			n, err = s.Prune(ctx, 10)
			require.NoError(t, err)
			require.Zero(t, n)
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, 2, st[dedupe.Completed])
			require.Equal(t, 1, st[dedupe.InFlight])
			_, err = s.Get(ctx, "stripe:old0")
			require.ErrorIs(t, err, dedupe.ErrNotFound)
			_, rec, err := s.Claim(ctx, "stripe:new1", fp, nil)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
		}},
		{"list filters and pages in key order", func(t *testing.T, s dedupe.Store, clock *Clock) {
			for _, k := range []string{"xendit:a", "stripe:b", "stripe:a", "stripe:c"} {
				l, _, err := s.Claim(ctx, k, fp, nil)
				require.NoError(t, err)
				if k != "stripe:c" {
					require.NoError(t, s.Complete(ctx, l, ok))
				}
			}
			keys := func(o dedupe.ListOptions) []string {
				recs, err := s.List(ctx, o)
				require.NoError(t, err)
				var out []string
				for _, r := range recs {
					out = append(out, r.Key)
				}
				return out
			}
			require.Equal(t, []string{"stripe:a", "stripe:b", "stripe:c", "xendit:a"}, keys(dedupe.ListOptions{}))
			require.Equal(t, []string{"stripe:a", "stripe:b"}, keys(dedupe.ListOptions{Prefix: "stripe:", State: dedupe.Completed}))
			require.Equal(t, []string{"stripe:b", "stripe:c"}, keys(dedupe.ListOptions{Prefix: "stripe:", After: "stripe:a", Limit: 2}))
			require.Equal(t, []string{"stripe:c"}, keys(dedupe.ListOptions{State: dedupe.InFlight}))
			require.NoError(t, s.Ping(ctx))
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, map[dedupe.State]int{dedupe.Completed: 3, dedupe.InFlight: 1}, st, "Ping leaves nothing behind")
		}},
		{"claim keeps the request", func(t *testing.T, s dedupe.Store, clock *Clock) {
			body := []byte(`{"id":"evt_1","type":"charge.failed"}`)
			req := dedupe.NewRequest("application/json; charset=utf-8", "charge.failed", body, true)
			require.True(t, req.Stored())
			l, _, err := s.Claim(ctx, key, fp, req)
			require.NoError(t, err)
			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, req, got.Request, "kept with the claim, before any answer")
			require.NoError(t, s.Fail(ctx, l, dedupe.Response{Status: 422}))
			_, rec, err := s.Claim(ctx, key, fp, dedupe.NewRequest("text/plain", "other", []byte("x"), true))
			require.NoError(t, err)
			require.Nil(t, rec.Request.Body, "a replay answers without the request body")
			require.Equal(t, req.EventType, rec.Request.EventType)
			got, err = s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, req, got.Request)

			// Headers and size only: the body is not kept.
			l, _, err = s.Claim(ctx, "stripe:evt_2", fp, dedupe.NewRequest("application/json", "t", body, false))
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			got, err = s.Get(ctx, "stripe:evt_2")
			require.NoError(t, err)
			require.False(t, got.Request.Stored())
			require.Equal(t, len(body), got.Request.Size)
			require.Equal(t, "t", got.Request.EventType)

			big := bytes.Repeat([]byte("b"), dedupe.MaxStoredRequest+1)
			_, _, err = s.Claim(ctx, "stripe:evt_3", fp, dedupe.NewRequest("application/json", "t", big, true))
			require.NoError(t, err)
			got, err = s.Get(ctx, "stripe:evt_3")
			require.NoError(t, err)
			require.False(t, got.Request.Stored(), "a body over MaxStoredRequest is not kept")
			require.Equal(t, len(big), got.Request.Size)

			full := bytes.Repeat([]byte("f"), dedupe.MaxStoredRequest)
			_, _, err = s.Claim(ctx, "stripe:evt_4", fp, dedupe.NewRequest("application/json", "t", full, true))
			require.NoError(t, err)
			got, err = s.Get(ctx, "stripe:evt_4")
			require.NoError(t, err)
			require.True(t, got.Request.Stored(), "a body of MaxStoredRequest is kept whole")

			_, _, err = s.Claim(ctx, "stripe:evt_5", fp, nil)
			require.NoError(t, err)
			got, err = s.Get(ctx, "stripe:evt_5")
			require.NoError(t, err)
			require.Nil(t, got.Request)
		}},
		{"takeover replaces the request", func(t *testing.T, s dedupe.Store, clock *Clock) {
			_, _, err := s.Claim(ctx, key, fp, dedupe.NewRequest("application/json", "a", []byte("1"), true))
			require.NoError(t, err)
			clock.Advance(time.Minute)
			second := dedupe.NewRequest("application/json", "b", []byte("22"), true)
			_, _, err = s.Claim(ctx, key, fp, second)
			require.NoError(t, err)
			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, second, got.Request)
		}},
		{"settle of a caller gone still lands", func(t *testing.T, s dedupe.Store, clock *Clock) {
			gone, cancel := context.WithCancel(ctx)
			cancel()
			for _, tt := range []struct {
				name   string
				settle func(l dedupe.Lease) error
				want   dedupe.State // 0: the record is gone
			}{
				{"complete", func(l dedupe.Lease) error { return s.Complete(gone, l, ok) }, dedupe.Completed},
				{"fail", func(l dedupe.Lease) error { return s.Fail(gone, l, dedupe.Response{Status: 400}) }, dedupe.Failed},
				{"release", func(l dedupe.Lease) error { return s.Release(gone, l) }, 0},
			} {
				k := "stripe:evt_settle_" + tt.name
				l, _, err := s.Claim(ctx, k, fp, nil)
				require.NoError(t, err)
				_ = tt.settle(l)
				require.Eventually(t, func() bool {
					rec, err := s.Get(ctx, k)
					if tt.want == 0 {
						return errors.Is(err, dedupe.ErrNotFound)
					}
					return err == nil && rec.State == tt.want
				}, 5*time.Second, 5*time.Millisecond, tt.name)
				// The provider's next delivery is replayed (or, released,
				// claimed anew), not refused as in flight.
				_, rec, err := s.Claim(ctx, k, fp, nil)
				require.NoError(t, err, tt.name)
				if tt.want == 0 {
					require.Nil(t, rec, tt.name)
				} else {
					require.Equal(t, tt.want, rec.State, tt.name)
				}
			}

			k := "stripe:evt_settle_taken_over"
			old, _, err := s.Claim(ctx, k, fp, nil)
			require.NoError(t, err)
			clock.Advance(2 * time.Minute)
			cur, _, err := s.Claim(ctx, k, fp, nil)
			require.NoError(t, err, "a takeover of the expired lease")
			for _, settle := range []func() error{
				func() error { return s.Complete(gone, old, ok) },
				func() error { return s.Fail(gone, old, ok) },
				func() error { return s.Release(gone, old) },
			} {
				if err := settle(); err != nil && !errors.Is(err, context.Canceled) {
					require.ErrorIs(t, err, dedupe.ErrLeaseLost)
				}
			}
			require.NoError(t, s.Complete(ctx, cur, ok), "the late settles left the new owner's lease alone")
		}},
		{"keys are accepted and refused alike", func(t *testing.T, s dedupe.Store, clock *Clock) {
			// dedupe.Key decides for every backend: what one stores, all
			// store; what one refuses, all refuse.
			long := strings.Repeat("e", dedupe.MaxKeyLen-len("stripe:"))
			valid := []dedupe.Key{
				{Source: "stripe-eu", Event: "evt_1"},
				{Source: "stripe-eu", Event: "evt_1", Destination: "ledger"},
				{Source: "2c2p", Event: "inv-é:00"},
				{Source: "stripe", Event: long},
			}
			for _, k := range valid {
				l, _, err := s.Claim(ctx, k.String(), fp, nil)
				require.NoError(t, err, "%q", k.String())
				require.NoError(t, s.Complete(ctx, l, ok))
				got, err := s.Get(ctx, k.String())
				require.NoError(t, err)
				require.Equal(t, k.String(), got.Key)
			}
			for _, bad := range []string{"stripe:evt\xff", "stripe:evt\x001", "stripe:" + long + "x", "stripe:evt_1\x1fdefault", "Stripe:evt_1"} {
				_, _, err := s.Claim(ctx, bad, fp, nil)
				require.ErrorIs(t, err, dedupe.ErrInvalidKey, "%q", bad)
				_, err = s.Get(ctx, bad)
				require.ErrorIs(t, err, dedupe.ErrInvalidKey, "%q", bad)
			}
		}},
	}
}
