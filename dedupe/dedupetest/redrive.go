package dedupetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// redriveCases are the kit's cases of redrive and of the listings: what a
// redrive leaves behind when it is interrupted, and that listings read no
// stored body.
func redriveCases() []kitCase {
	ctx, key, fp, ok := fixture()
	return []kitCase{
		{"redrive", func(t *testing.T, s dedupe.Store, clock *Clock) {
			req := dedupe.NewRequest("application/json", "charge.failed", []byte(`{"id":"evt_1"}`), true)
			_, _, err := s.Redrive(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrNotFound)
			l, _, err := s.Claim(ctx, key, fp, req)
			require.NoError(t, err)
			_, rec, err := s.Redrive(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrInFlight, "never while a lease runs")
			require.Equal(t, l.Until, rec.LeaseUntil)
			rejected := dedupe.Response{Status: 422, ContentType: "text/plain", Body: []byte("no")}
			require.NoError(t, s.Fail(ctx, l, rejected))
			created := clock.Now()

			clock.Advance(time.Second)
			r, rec, err := s.Redrive(ctx, key)
			require.NoError(t, err)
			require.NotZero(t, r.Token)
			require.NotEqual(t, l.Token, r.Token)
			require.Equal(t, clock.Now().Add(time.Minute), r.Until)
			require.Equal(t, dedupe.Failed, rec.State, "the record stays as it is until the redrive's answer")
			require.Equal(t, rejected, rec.Response)
			require.Equal(t, uint32(1), rec.Attempts)
			require.Equal(t, req, rec.Request)
			require.Equal(t, fp, rec.Fingerprint)
			require.True(t, rec.CreatedAt.Equal(created))
			_, _, err = s.Redrive(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
			require.ErrorIs(t, s.Delete(ctx, key), dedupe.ErrInFlight, "nor deleted under the redrive")
			_, replay, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err, "a provider's retry is replayed the answer the record holds")
			require.Equal(t, rejected, replay.Response)
			require.ErrorIs(t, s.Complete(ctx, l, ok), dedupe.ErrLeaseLost, "the first lease is over")
			require.NoError(t, s.Complete(ctx, r, ok))

			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, got.State)
			require.Equal(t, ok, got.Response)
			require.Equal(t, req, got.Request)
			require.Equal(t, uint32(2), got.Attempts)
			require.True(t, got.UpdatedAt.Equal(clock.Now()))
			_, rec2, err := s.Claim(ctx, key, fp, nil)
			require.NoError(t, err)
			require.Equal(t, ok, rec2.Response, "later deliveries replay the redrive's answer")
			// An operator may redrive a COMPLETED record too: the core
			// receives it again with the same Idempotency-Key.
			clock.Advance(time.Second)
			r, rec, err = s.Redrive(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, rec.State)
			require.Equal(t, uint32(2), rec.Attempts)
			require.Equal(t, ok, rec.Response, "the answer stays until the redrive's is recorded")
			require.Equal(t, req, rec.Request)
			_, _, err = s.Redrive(ctx, key)
			require.ErrorIs(t, err, dedupe.ErrInFlight)
			require.NoError(t, s.Complete(ctx, r, ok))
			got, err = s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, dedupe.Completed, got.State)
			require.Equal(t, uint32(3), got.Attempts)

			// A claim abandoned past its lease may be redriven too.
			_, _, err = s.Claim(ctx, "stripe:evt_2", fp, req)
			require.NoError(t, err)
			clock.Advance(time.Minute)
			r, _, err = s.Redrive(ctx, "stripe:evt_2")
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, r))

			// Nothing to forward: refused, unchanged.
			l, _, err = s.Claim(ctx, "stripe:evt_3", fp, dedupe.NewRequest("application/json", "t", []byte("{}"), false))
			require.NoError(t, err)
			require.NoError(t, s.Fail(ctx, l, rejected))
			_, _, err = s.Redrive(ctx, "stripe:evt_3")
			require.ErrorIs(t, err, dedupe.ErrNoRequest)
			l, _, err = s.Claim(ctx, "stripe:evt_4", fp, nil)
			require.NoError(t, err)
			require.NoError(t, s.Fail(ctx, l, rejected))
			_, _, err = s.Redrive(ctx, "stripe:evt_4")
			require.ErrorIs(t, err, dedupe.ErrNoRequest)
			got, err = s.Get(ctx, "stripe:evt_4")
			require.NoError(t, err)
			require.Equal(t, dedupe.Failed, got.State)
			require.Equal(t, uint32(1), got.Attempts)
			l, _, err = s.Claim(ctx, "stripe:evt_5", fp, nil)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			_, _, err = s.Redrive(ctx, "stripe:evt_5")
			require.ErrorIs(t, err, dedupe.ErrNoRequest, "COMPLETED, but nothing to forward")
		}},
		{"redrive interrupted leaves the record as it was", func(t *testing.T, s dedupe.Store, clock *Clock) {
			req := dedupe.NewRequest("application/json", "charge.succeeded", []byte(`{"id":"evt_1"}`), true)
			l, _, err := s.Claim(ctx, key, fp, req)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, l, ok))
			before, err := s.Get(ctx, key)
			require.NoError(t, err)
			same := func(t *testing.T, why string) {
				t.Helper()
				got, err := s.Get(ctx, key)
				require.NoError(t, err)
				require.Equal(t, before.State, got.State, why)
				require.Equal(t, before.Response, got.Response, why)
				require.Equal(t, before.Request, got.Request, why)
				require.Equal(t, before.Attempts, got.Attempts, why)
				require.True(t, before.UpdatedAt.Equal(got.UpdatedAt), why)
				require.True(t, before.ExpiresAt.Equal(got.ExpiresAt), "%s: expires_at %v, want %v", why, got.ExpiresAt, before.ExpiresAt)
				_, rec, err := s.Claim(ctx, key, fp, nil)
				require.NoError(t, err, why)
				require.Equal(t, dedupe.Completed, rec.State, why)
				require.Equal(t, ok, rec.Response, "%s: a provider retry is a replay", why)
			}

			// The process dies mid-redrive: nothing answers the lease.
			clock.Advance(time.Second)
			_, _, err = s.Redrive(ctx, key)
			require.NoError(t, err)
			same(t, "during the redrive")
			clock.Advance(time.Minute)
			same(t, "after the redrive's lease passed")
			clock.Advance(90 * time.Minute)
			n, err := s.Prune(ctx, 100)
			require.NoError(t, err)
			require.Zero(t, n, "kept for its retention, not the lease's abandon period")
			same(t, "after an hour and a half")

			// The core does not answer: the redrive gives its lease up.
			r, _, err := s.Redrive(ctx, key)
			require.NoError(t, err, "a redrive whose lease passed is over")
			clock.Advance(time.Second)
			require.NoError(t, s.Release(ctx, r))
			require.ErrorIs(t, s.Release(ctx, r), dedupe.ErrLeaseLost)
			require.ErrorIs(t, s.Complete(ctx, r, ok), dedupe.ErrLeaseLost)
			same(t, "after a released redrive")

			// An answer recorded afterwards is the redrive's.
			r, _, err = s.Redrive(ctx, key)
			require.NoError(t, err)
			clock.Advance(time.Second)
			again := dedupe.Response{Status: 201, Body: []byte("again")}
			require.NoError(t, s.Complete(ctx, r, again))
			got, err := s.Get(ctx, key)
			require.NoError(t, err)
			require.Equal(t, again, got.Response)
			require.Equal(t, before.Attempts+1, got.Attempts)
			require.True(t, got.UpdatedAt.Equal(clock.Now()))
			require.True(t, got.ExpiresAt.Equal(clock.Now().Add(2*time.Hour)))
			require.Zero(t, got.Token)
			require.NoError(t, s.Delete(ctx, key))
		}},
		{"listings and replays read no stored body", func(t *testing.T, s dedupe.Store, clock *Clock) {
			const n = 16
			big := bytes.Repeat([]byte("x"), dedupe.MaxStoredRequest)
			answer := dedupe.Response{Status: 200, ContentType: "application/json", Body: bytes.Repeat([]byte("y"), 1000)}
			for i := range n {
				l, _, err := s.Claim(ctx, fmt.Sprintf("stripe:evt_big_%02d", i), fp, dedupe.NewRequest("application/json", "invoice.paid", big, true))
				require.NoError(t, err)
				require.NoError(t, s.Complete(ctx, l, answer))
			}
			big = nil
			// Each listing would copy n MiB of stored requests; what it
			// allocates beside them is a few KiB per record.
			const bound = 2 << 20
			listed := func(t *testing.T, recs []dedupe.Record) {
				t.Helper()
				require.Len(t, recs, n)
				for _, rec := range recs {
					require.Equal(t, 200, rec.Response.Status)
					require.Nil(t, rec.Response.Body)
					require.Equal(t, "invoice.paid", rec.Request.EventType)
					require.Equal(t, dedupe.MaxStoredRequest, rec.Request.Size)
					require.Nil(t, rec.Request.Body)
					require.True(t, rec.Request.Stored(), "stored, though not read")
				}
			}
			var (
				recs []dedupe.Record
				err  error
			)
			a := allocated(func() { recs, _, err = s.Recent(ctx, dedupe.RecentOptions{Limit: 100}) })
			require.NoError(t, err)
			listed(t, recs)
			require.Less(t, a, uint64(bound), "Recent allocated %d bytes", a)
			a = allocated(func() { recs, err = s.List(ctx, dedupe.ListOptions{Prefix: "stripe:"}) })
			require.NoError(t, err)
			listed(t, recs)
			require.Less(t, a, uint64(bound), "List allocated %d bytes", a)

			var rec *dedupe.Record
			for range 2 { // the tiered store's second replay is from its copy
				a = allocated(func() { _, rec, err = s.Claim(ctx, "stripe:evt_big_00", fp, nil) })
				require.NoError(t, err)
				require.Equal(t, answer, rec.Response)
				require.Less(t, a, uint64(dedupe.MaxStoredRequest/4), "a replay allocated %d bytes", a)
			}
			got, err := s.Get(ctx, "stripe:evt_big_00")
			require.NoError(t, err)
			require.Len(t, got.Request.Body, dedupe.MaxStoredRequest, "Get reads the stored request")
			require.False(t, got.Request.Unread)
		}},
		{"recent lists newest first and pages", func(t *testing.T, s dedupe.Store, clock *Clock) {
			// Created one second apart; two share an instant, ordered by key.
			keys := []string{"stripe:a", "xendit:b", "stripe:c", "stripe:d", "xendit:e"}
			for i, k := range keys {
				if i != 3 {
					clock.Advance(time.Second)
				}
				l, _, err := s.Claim(ctx, k, fp, nil)
				require.NoError(t, err)
				if k != "stripe:c" {
					require.NoError(t, s.Fail(ctx, l, ok))
				}
			}
			clock.Advance(time.Second)
			l, _, err := s.Claim(ctx, "stripe:gone", fp, nil)
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, l))
			page := func(o dedupe.RecentOptions) ([]string, string) {
				recs, next, err := s.Recent(ctx, o)
				require.NoError(t, err)
				var out []string
				for _, r := range recs {
					out = append(out, r.Key)
				}
				return out, next
			}
			all, next := page(dedupe.RecentOptions{})
			require.Equal(t, []string{"xendit:e", "stripe:d", "stripe:c", "xendit:b", "stripe:a"}, all)
			require.Empty(t, next)
			got, next := page(dedupe.RecentOptions{Limit: 2})
			require.Equal(t, []string{"xendit:e", "stripe:d"}, got)
			require.NotEmpty(t, next)
			got, next = page(dedupe.RecentOptions{Limit: 2, Cursor: next})
			require.Equal(t, []string{"stripe:c", "xendit:b"}, got)
			got, next = page(dedupe.RecentOptions{Limit: 2, Cursor: next})
			require.Equal(t, []string{"stripe:a"}, got)
			require.Empty(t, next)
			got, _ = page(dedupe.RecentOptions{Provider: "stripe"})
			require.Equal(t, []string{"stripe:d", "stripe:c", "stripe:a"}, got)
			got, _ = page(dedupe.RecentOptions{Provider: "stripe", State: dedupe.Failed, Limit: 1})
			require.Equal(t, []string{"stripe:d"}, got)
			got, _ = page(dedupe.RecentOptions{State: dedupe.InFlight})
			require.Equal(t, []string{"stripe:c"}, got)
			got, _ = page(dedupe.RecentOptions{Provider: "strip"})
			require.Empty(t, got, "a provider is a whole name, not a prefix")

			// Destinations: the default one's keys name none.
			clock.Advance(time.Second)
			for _, k := range []dedupe.Key{{Source: "stripe-eu", Event: "f", Destination: "ledger"}, {Source: "stripe-eu", Event: "f", Destination: "billing"}} {
				l, _, err := s.Claim(ctx, k.String(), fp, nil)
				require.NoError(t, err)
				require.NoError(t, s.Complete(ctx, l, ok))
			}
			got, _ = page(dedupe.RecentOptions{Destination: "ledger"})
			require.Equal(t, []string{"stripe-eu:f\x1fledger"}, got)
			got, _ = page(dedupe.RecentOptions{Destination: "ledge"})
			require.Empty(t, got, "a destination is a whole name")
			got, _ = page(dedupe.RecentOptions{Destination: dedupe.DefaultDestination, Limit: 2})
			require.Equal(t, []string{"xendit:e", "stripe:d"}, got)
			got, _ = page(dedupe.RecentOptions{Provider: "stripe-eu", Destination: "billing"})
			require.Equal(t, []string{"stripe-eu:f\x1fbilling"}, got)
			for _, k := range []string{"stripe-eu:f\x1fledger", "stripe-eu:f\x1fbilling"} {
				require.NoError(t, s.ForceDelete(ctx, k))
			}

			// Finishing and redriving keep a record's place; deleting and
			// pruning take it out.
			_, _, err = s.Redrive(ctx, "xendit:b")
			require.ErrorIs(t, err, dedupe.ErrNoRequest)
			require.NoError(t, s.Delete(ctx, "stripe:d"))
			got, _ = page(dedupe.RecentOptions{})
			require.Equal(t, []string{"xendit:e", "stripe:c", "xendit:b", "stripe:a"}, got)
			clock.Advance(3 * time.Hour)
			_, err = s.Prune(ctx, 100)
			require.NoError(t, err)
			got, _ = page(dedupe.RecentOptions{})
			require.Empty(t, got)

			_, _, err = s.Recent(ctx, dedupe.RecentOptions{Cursor: "!"})
			require.ErrorIs(t, err, dedupe.ErrInvalidCursor)
		}},
		// A settle (complete, fail, release) whose caller has stopped
		// waiting (the receiver bounds each store call by
		// WEBHOOKD_STORE_TIMEOUT) still takes effect: skipped, it would leave
		// the key IN_FLIGHT until the lease passes, and the provider's next
		// delivery of an event the core service already has would be
		// forwarded again. The caller may hear its own give-up or the answer;
		// either way the write lands. The lease's token still guards it: a
		// late settle of a lease taken over changes nothing.
	}
}
