package requestlog_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/requestlog"
)

// store records each append; while gate is set, an append waits on it.
type store struct {
	mu      sync.Mutex
	batches [][]dedupe.LoggedRequest
	bounds  []dedupe.RequestLogBounds
	gate    chan struct{}
	entered chan struct{}
	err     error
}

func (s *store) AppendRequests(_ context.Context, e []dedupe.LoggedRequest, b dedupe.RequestLogBounds) error {
	if s.gate != nil {
		s.entered <- struct{}{}
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, append([]dedupe.LoggedRequest(nil), e...))
	s.bounds = append(s.bounds, b)
	return s.err
}

func (s *store) entries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.batches {
		n += len(b)
	}
	return n
}

func entry(i int) dedupe.LoggedRequest {
	return dedupe.LoggedRequest{Source: "stripe", Outcome: "unauthorized", Status: 401, Size: int64(i)}
}

func TestBatchesAreOneWriteEach(t *testing.T) {
	s := &store{}
	// An interval no test waits for: only MaxBatch and Close flush.
	l := requestlog.New(s, requestlog.Options{Interval: time.Hour, MaxBatch: 100, Bounds: dedupe.RequestLogBounds{Size: 7, Age: time.Minute}})
	for i := range 250 {
		l.Add(entry(i))
	}
	l.Close()
	require.Equal(t, 250, s.entries())
	require.Len(t, s.batches, 3, "250 entries, batches of 100: three writes, not 250")
	require.Equal(t, int64(0), s.batches[0][0].Size, "in arrival order")
	require.Equal(t, int64(249), s.batches[2][49].Size)
	require.Equal(t, dedupe.RequestLogBounds{Size: 7, Age: time.Minute}, s.bounds[0], "the store trims to the bounds")
}

func TestAFullBufferDropsAndCounts(t *testing.T) {
	s := &store{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	var dropped atomic.Int64
	l := requestlog.New(s, requestlog.Options{Interval: time.Hour, MaxBatch: 1, Buffer: 10,
		OnDrop: func(n int) { dropped.Add(int64(n)) }})
	l.Add(entry(0))
	<-s.entered // the flusher is stuck in a write: nothing drains the buffer
	for i := range 30 {
		l.Add(entry(i + 1)) // never blocks
	}
	require.Equal(t, int64(20), dropped.Load(), "ten wait in the buffer, the rest are dropped")
	go func() {
		for range s.entered {
		}
	}()
	close(s.gate)
	l.Close()
	close(s.entered)
	require.Equal(t, 11, s.entries())
}

func TestAFailedWriteCountsItsEntriesLost(t *testing.T) {
	s := &store{err: errors.New("disk full")}
	var dropped atomic.Int64
	l := requestlog.New(s, requestlog.Options{Interval: time.Hour, OnDrop: func(n int) { dropped.Add(int64(n)) }})
	for i := range 5 {
		l.Add(entry(i))
	}
	l.Close()
	require.Equal(t, int64(5), dropped.Load())
}

func TestEntry(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		d    receiver.Delivery
		want dedupe.LoggedRequest
	}{
		{"forwarded", receiver.Delivery{Provider: "stripe", Key: "stripe:evt_1", Type: "charge.succeeded", Outcome: receiver.OutcomeForwarded,
			Status: 200, Received: at, RemoteAddr: "192.0.2.1:1234", Size: 310},
			dedupe.LoggedRequest{Time: at, Source: "stripe", Provider: "stripe", Outcome: "forwarded", Status: 200, Size: 310,
				RemoteAddr: "192.0.2.1:1234", EventKey: "evt_1", Type: "charge.succeeded"}},
		{"released with 503, key kept", receiver.Delivery{Provider: "stripe", Key: "stripe:evt_2", Outcome: receiver.OutcomeUnavailable, Status: 503, Received: at},
			dedupe.LoggedRequest{Time: at, Source: "stripe", Provider: "stripe", Outcome: "unavailable", Status: 503, EventKey: "evt_2"}},
		{"refused: no key", receiver.Delivery{Provider: "stripe", Outcome: receiver.OutcomeUnauthorized, Reason: "signature_invalid", Status: 401, Received: at, Size: 9},
			dedupe.LoggedRequest{Time: at, Source: "stripe", Provider: "stripe", Outcome: "unauthorized", Reason: "signature_invalid", Status: 401, Size: 9}},
		{"unknown route", receiver.Delivery{Provider: strings.Repeat("é", 40), Outcome: receiver.OutcomeNotFound, Reason: "unknown_source", Status: 404, Received: at},
			dedupe.LoggedRequest{Time: at, Source: strings.Repeat("é", 32), Outcome: "not_found", Reason: "unknown_source", Status: 404}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, requestlog.Entry(tt.d))
		})
	}
}
