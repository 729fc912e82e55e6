package lmdb

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// requestEntry is an entry as requestlog makes it for a signed delivery.
func requestEntry(at time.Time) dedupe.LoggedRequest {
	return dedupe.LoggedRequest{Time: at, Source: "stripe", Provider: "stripe", Outcome: "forwarded", Status: 200,
		Size: 1712, RemoteAddr: "10.1.2.3:54321", EventKey: "evt_1", Type: "payment_intent.succeeded"}
}

// TestAppendRequest: the request log's value is, byte for byte, what
// json.Marshal writes for the entry, or Marshal's error.
func TestAppendRequest(t *testing.T) {
	at := time.Date(2026, 12, 1, 23, 4, 5, 123456789, time.UTC)
	tests := []struct {
		name string
		edit func(e *dedupe.LoggedRequest)
	}{
		{"signed delivery", func(*dedupe.LoggedRequest) {}},
		{"refused, no key or type", func(e *dedupe.LoggedRequest) {
			e.Outcome, e.Reason, e.Status, e.EventKey, e.Type = "unauthorized", "signature_invalid", 401, "", ""
		}},
		{"an id", func(e *dedupe.LoggedRequest) { e.ID = "0123abcd" }},
		{"zero time", func(e *dedupe.LoggedRequest) { e.Time = time.Time{} }},
		{"whole seconds", func(e *dedupe.LoggedRequest) { e.Time = at.Truncate(time.Second) }},
		{"a zone", func(e *dedupe.LoggedRequest) { e.Time = at.In(time.FixedZone("WIB", 7*3600)) }},
		{"a negative zone with minutes", func(e *dedupe.LoggedRequest) { e.Time = at.In(time.FixedZone("", -(9*3600 + 30*60))) }},
		{"a zone Marshal refuses", func(e *dedupe.LoggedRequest) { e.Time = at.In(time.FixedZone("", 24*3600)) }},
		{"year 10000", func(e *dedupe.LoggedRequest) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"year -1", func(e *dedupe.LoggedRequest) { e.Time = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"a quote and a backslash", func(e *dedupe.LoggedRequest) { e.Source = `a"b\c` }},
		{"HTML", func(e *dedupe.LoggedRequest) { e.Source = "<a>&" }},
		{"a control character", func(e *dedupe.LoggedRequest) { e.Source = "a\x01\tb" }},
		{"DEL", func(e *dedupe.LoggedRequest) { e.Source = "a\x7f" }},
		{"UTF-8", func(e *dedupe.LoggedRequest) { e.Source = "tranſaction é" }},
		{"invalid UTF-8", func(e *dedupe.LoggedRequest) { e.EventKey = "evt_\xff" }},
		{"line separator", func(e *dedupe.LoggedRequest) { e.Type = "a\u2028b" }},
		{"negative numbers", func(e *dedupe.LoggedRequest) { e.Status, e.Size = -1, -9223372036854775808 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := requestEntry(at)
			tt.edit(&e)
			sameAsMarshal(t, e)
		})
	}
}

func sameAsMarshal(t *testing.T, e dedupe.LoggedRequest) {
	t.Helper()
	want, wantErr := json.Marshal(e)
	got, err := appendRequest([]byte("prefix"), e)
	if wantErr != nil {
		require.Error(t, err)
		return
	}
	require.NoError(t, err)
	require.Equal(t, "prefix"+string(want), string(got))
}

// FuzzAppendRequest holds appendRequest to json.Marshal on any strings,
// times and zones.
func FuzzAppendRequest(f *testing.F) {
	f.Add("stripe", "evt_1", "<&>", int64(1764630245123456789), 0, 200, int64(1712))
	f.Add("a\"b", "\xff", "\u2028", int64(-62135596800000000), -34200, -1, int64(0))
	f.Fuzz(func(t *testing.T, source, key, reason string, nanos int64, offset, status int, size int64) {
		e := dedupe.LoggedRequest{Time: time.Unix(0, nanos).In(time.FixedZone("", offset)), Source: source,
			Provider: source, Outcome: "forwarded", Reason: reason, Status: status, Size: size, RemoteAddr: key,
			EventKey: key, Type: reason}
		sameAsMarshal(t, e)
	})
}

// TestAppendRequestsOutOfOrder: entries that end out of their arrival
// order, within a batch or after the last batch's newest, are listed by
// arrival, and the log is trimmed from the oldest arrival.
func TestAppendRequestsOutOfOrder(t *testing.T) {
	s, err := Open(t.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	base := time.Now().Add(-time.Minute)
	at := func(i int) dedupe.LoggedRequest {
		e := requestEntry(base.Add(time.Duration(i) * time.Millisecond))
		e.Size = int64(i)
		return e
	}
	b := dedupe.RequestLogBounds{Size: 5, Age: time.Hour}
	require.NoError(t, s.AppendRequests(ctx, []dedupe.LoggedRequest{at(3), at(1), at(2)}, b))
	require.NoError(t, s.AppendRequests(ctx, []dedupe.LoggedRequest{at(5), at(0), at(4)}, b))
	require.NoError(t, s.AppendRequests(ctx, []dedupe.LoggedRequest{at(6)}, b))
	got, _, err := s.ListRequests(ctx, dedupe.RequestFilter{})
	require.NoError(t, err)
	var sizes []int64
	for _, e := range got {
		sizes = append(sizes, e.Size)
	}
	require.Equal(t, []int64{6, 5, 4, 3, 2}, sizes, "newest first, the two oldest trimmed")
}

// TestAppendRequestsAllocations bounds what one flush of the request log
// allocates, the writer's commit and the trim of as many old entries
// included: a handful whatever the batch's size (the batch's keys, values
// and their index; the trim reads keys without copying them). Marshal and
// a copy of every trimmed key and value took six allocations an entry.
func TestAppendRequestsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates, and makes sync.Pool drop entries")
	}
	s, err := Open(t.TempDir(), Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	b := dedupe.RequestLogBounds{Size: 512, Age: time.Hour}
	at := time.Now().Add(-time.Minute)
	batch := make([]dedupe.LoggedRequest, 256)
	next := func() {
		for i := range batch {
			at = at.Add(time.Microsecond)
			batch[i] = requestEntry(at)
		}
	}
	for range 3 { // the log at its bound: each append trims a batch
		next()
		require.NoError(t, s.AppendRequests(ctx, batch, b))
	}
	allocs := testing.AllocsPerRun(20, func() {
		next()
		if err := s.AppendRequests(ctx, batch, b); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per append of %d entries", allocs, len(batch))
	require.LessOrEqual(t, allocs, 12.0)
}
