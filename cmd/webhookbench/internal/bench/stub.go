package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The downstream's behaviours in faults mode, cycled request by request.
const (
	faultUnavailable = iota // 503
	faultTimeout            // no answer until the caller gives up
	faultReset              // the connection is closed under the request
	faultAccept             // 200: the event is taken
	numFaults
)

// faultNames label the behaviours in reports.
var faultNames = [numFaults]string{"503", "timeout", "reset", "200"}

// stubEvent is what the stub saw of one event.
type stubEvent struct {
	// forwards counts requests that reached the stub, whatever it did
	// with them.
	forwards int
	// accepted counts requests answered 200 (in faults mode only the
	// faultAccept ones).
	accepted int
	// firstAccept is when the first 200 was decided, just before it was
	// written.
	firstAccept time.Time
	// keys are the distinct Idempotency-Key values seen ("" for none).
	keys map[string]struct{}
	// arrivals are when each forward reached the stub, in order: crash
	// mode against a queue destination tells by them whether a second
	// forward followed a kill that cut the first attempt short.
	arrivals []time.Time
}

// stub is the downstream core service: an in-process HTTP server that
// counts forwards per event (the "id" in the body, so that no header of the
// system under test decides what counts as one event) and records each
// Idempotency-Key. It answers every POST 200 at once, or in faults mode
// cycles through faultNames.
type stub struct {
	URL    string
	srv    *http.Server
	faults bool
	// hold bounds how long a faultTimeout request is held when its caller
	// does not hang up first.
	hold time.Duration

	n       atomic.Uint64
	byFault [numFaults]atomic.Int64
	// total counts every forward, for waits that need to see the stub
	// go quiet.
	total atomic.Uint64

	mu     sync.Mutex
	events map[string]*stubEvent
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// newStub starts a stub on a loopback port.
func newStub(faults bool, hold time.Duration) (*stub, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &stub{URL: "http://" + ln.Addr().String() + "/events", faults: faults, hold: hold, events: make(map[string]*stubEvent)}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the stub.
func (s *stub) Close() { _ = s.srv.Close() }

// reset forgets every event, after a warm-up.
func (s *stub) reset() {
	s.mu.Lock()
	s.events = make(map[string]*stubEvent)
	s.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (s *stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return
	}
	id := eventIDOf(buf.Bytes())
	key := r.Header.Get("Idempotency-Key")

	fault := faultAccept
	if s.faults {
		fault = int((s.n.Add(1) - 1) % numFaults)
	}
	s.byFault[fault].Add(1)

	s.mu.Lock()
	e := s.events[id]
	if e == nil {
		e = &stubEvent{keys: make(map[string]struct{}, 1)}
		s.events[id] = e
	}
	e.forwards++
	e.arrivals = append(e.arrivals, time.Now())
	e.keys[key] = struct{}{}
	if fault == faultAccept {
		e.accepted++
		if e.firstAccept.IsZero() {
			e.firstAccept = time.Now()
		}
	}
	s.mu.Unlock()
	s.total.Add(1)

	switch fault {
	case faultAccept:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"received":true}`))
	case faultUnavailable:
		w.WriteHeader(http.StatusServiceUnavailable)
	case faultTimeout:
		// The event is not taken: a core service that times out rolls
		// back. Hold the request until the caller gives up.
		ctx, cancel := context.WithTimeout(r.Context(), s.hold)
		<-ctx.Done()
		cancel()
		w.WriteHeader(http.StatusGatewayTimeout)
	case faultReset:
		hj, ok := w.(http.Hijacker)
		if !ok {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a RST, not a FIN
		}
		_ = conn.Close()
	}
}

// snapshot copies the per-event records.
func (s *stub) snapshot() map[string]stubEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]stubEvent, len(s.events))
	for id, e := range s.events {
		c := *e
		c.arrivals = slices.Clone(e.arrivals)
		out[id] = c
	}
	return out
}

// missing counts the events of ids the stub has not seen.
func (s *stub) missing(ids []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range ids {
		if s.events[id] == nil {
			n++
		}
	}
	return n
}

// faultCounts reports how many requests got each behaviour.
func (s *stub) faultCounts() map[string]int64 {
	out := make(map[string]int64, numFaults)
	for i, n := range faultNames {
		if c := s.byFault[i].Load(); c > 0 {
			out[n] = c
		}
	}
	return out
}

// discard drains and closes a body so the connection can be reused.
func discard(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, rc)
	_ = rc.Close()
}
