// Package dedupetest is the conformance kit of the dedupe contract: one
// behavioural table (Run) that every backend's tests run over their store,
// so that the backends answer alike, and the helpers those tests share.
package dedupetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// Run runs the behavioural table over the store open returns: every case
// opens a fresh store, with a Lease of a minute, a Retention of two hours,
// an AbandonAfter of an hour and Now reading a Clock the case advances.
// open must return an empty store with these options, its background
// pruner disabled (the cases call Prune), and close it when the test ends.
func Run(t *testing.T, open func(t *testing.T, opts dedupe.Options) dedupe.Store) {
	t.Helper()
	ctx := context.Background()
	const (
		key = "stripe:evt_1"
		fp  = "fp-a"
	)
	ok := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	cases := []struct {
		name string
		run  func(t *testing.T, s dedupe.Store, clock *Clock)
	}{
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock()
			s := open(t, dedupe.Options{Lease: time.Minute, Retention: 2 * time.Hour, AbandonAfter: time.Hour, Now: clock.Now})
			tc.run(t, s, clock)
		})
	}
}

// BenchClaimComplete measures one delivery's store work on s, a claim of a
// new key keeping req (nil: none) and its completion, from parallel
// callers. Keys are unique across runs, so that one store serves several.
func BenchClaimComplete(b *testing.B, s dedupe.Store, req *dedupe.Request) {
	b.Helper()
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("stripe:evt_%d_%d", time.Now().UnixNano(), n.Add(1))
			l, _, err := s.Claim(ctx, key, "fp", req)
			if err != nil {
				b.Error(err)
				return
			}
			if err := s.Complete(ctx, l, dedupe.Response{Status: 200}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchReplay measures the path of every provider retry of a finished
// event on s: a Claim that replays a COMPLETED record whose stored request
// is bodySize bytes (run with -benchmem).
func BenchReplay(b *testing.B, s dedupe.Store, bodySize int) {
	b.Helper()
	ctx := context.Background()
	key := StoreFinished(b, s, bodySize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, rec, err := s.Claim(ctx, key, "fp", nil); err != nil || rec == nil {
			b.Fatal(err, rec)
		}
	}
}

// StoreFinished stores a new COMPLETED record, claimed with fingerprint
// "fp" and a request of bodySize bytes, and returns its key.
func StoreFinished(tb testing.TB, s dedupe.Store, bodySize int) string {
	tb.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("stripe:evt_replay_%d_%d", bodySize, time.Now().UnixNano())
	req := dedupe.NewRequest("application/json", "invoice.paid", bytes.Repeat([]byte("x"), bodySize), true)
	l, _, err := s.Claim(ctx, key, "fp", req)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Complete(ctx, l, dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}); err != nil {
		tb.Fatal(err)
	}
	return key
}

// allocated returns the bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	fn()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// Clock is a settable clock, for Options.Now.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at a fixed instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
