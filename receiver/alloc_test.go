package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
)

// TestWriteErrorBytes: webhookd's error answers are byte for byte what
// encoding a {"error": msg} map gives, HTML and line-separator escapes and
// invalid UTF-8 included.
func TestWriteErrorBytes(t *testing.T) {
	for _, msg := range []string{
		"store unavailable",
		`unauthorized: "quoted" <b>&amp;</b>`,
		"line\nbreak\tand \u2028 \u2029",
		"invalid \xff utf-8",
		"",
	} {
		var want bytes.Buffer
		require.NoError(t, json.NewEncoder(&want).Encode(map[string]string{"error": msg}))
		rec := httptest.NewRecorder()
		writeError(rec, http.StatusUnauthorized, msg)
		require.Equal(t, want.String(), rec.Body.String(), msg)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
		require.Equal(t, http.StatusUnauthorized, rec.Code)
	}
}

// discardWriter is a ResponseWriter that keeps nothing, so that only the
// code under test allocates.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header       { return w.h }
func (discardWriter) WriteHeader(int)             {}
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestAllocationsPerDelivery bounds the allocations of the receiver's own
// steps that every delivery, or every refused one, runs. The bounds are
// what the code needs (the body's buffer; the header values net/http
// allocates; the encoder); each saving they pin was measured with
// BenchmarkDelivery. testing.AllocsPerRun counts are exact, and stable
// within a Go release.
func TestAllocationsPerDelivery(t *testing.T) {
	skipUnderRace(t)
	w := discardWriter{h: http.Header{}}
	body := []byte(`{"id":"evt_1","type":"charge.succeeded"}`)
	var br bytes.Reader
	r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", nil)
	r.Body, r.ContentLength = io.NopCloser(&br), int64(len(body))
	budget := newBodyBudget(1<<20, -1)
	tests := []struct {
		name string
		max  float64
		run  func()
	}{
		// The buffer alone; errors.As's target is only made when a read
		// fails.
		{"readBody", 1, func() {
			br.Reset(body)
			p := pendingBody{budget: budget}
			if _, err := p.read(w, r, 1<<20); err != nil {
				t.Fatal(err)
			}
			p.release()
		}},
		// Two header values and the encoder; a map would add itself and
		// reflection's copies of its key and value.
		{"writeError", 3, func() {
			clear(w.h)
			writeError(w, http.StatusUnauthorized, "unauthorized")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, tt.run)
			t.Logf("%s: %v allocations", tt.name, allocs)
			require.LessOrEqual(t, allocs, tt.max)
		})
	}
}

// stubProvider verifies everything and parses every body to one event, so
// that a delivery's allocations are the receiver's: its one item is made
// once, not per delivery.
type stubProvider struct{}

var stubItems = []providers.Item{{Event: providers.Event{Key: "evt_1", Type: "charge.succeeded", Fingerprint: "fp"}}}

func (stubProvider) Name() string                                       { return "stub" }
func (stubProvider) Verify(context.Context, providers.Delivery) error   { return nil }
func (stubProvider) Parse(providers.Delivery) ([]providers.Item, error) { return stubItems, nil }

// nopStore claims every key and records nothing.
type nopStore struct{}

func (nopStore) Claim(context.Context, string, string, *dedupe.Request) (dedupe.Lease, *dedupe.Record, error) {
	return dedupe.Lease{}, nil, nil
}
func (nopStore) Complete(context.Context, dedupe.Lease, dedupe.Response) error { return nil }
func (nopStore) Fail(context.Context, dedupe.Lease, dedupe.Response) error     { return nil }
func (nopStore) Release(context.Context, dedupe.Lease) error                   { return nil }

var received = []byte(`{"received":true}`)

// acceptingForwarder answers every forward 201.
type acceptingForwarder struct{}

func (acceptingForwarder) Forward(context.Context, dispatch.Request) dispatch.Result {
	return dispatch.Result{Outcome: dispatch.Delivered, Status: http.StatusCreated, Attempts: 1, Body: received}
}

// TestAllocationsOfAForward bounds what the receiver's pipeline allocates
// for a new event, forwarded and logged, around a provider, store and
// forwarder that allocate nothing: the router's request context and path
// value (4), the tracking writer, the store key, the store context, the
// forward's cancelable context and its tie to BaseContext (4), the store
// calls' deadlines (4 each, 2 calls), the forward's result, the body
// buffer, slog's array for the attributes past five, and the request kept
// with the claim (dedupe.Request, handed to the store): 23.
func TestAllocationsOfAForward(t *testing.T) {
	skipUnderRace(t)
	var reg providers.Registry
	require.NoError(t, reg.Register(stubProvider{}))
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := New(Config{Providers: &reg, Store: nopStore{}, Forwarder: acceptingForwarder{}, MaxBodyBytes: 1 << 10,
		Logger: slog.New(nopHandler{slog.LevelInfo}), BaseContext: base})
	require.NoError(t, err)
	w := discardWriter{h: http.Header{}}
	body := []byte(`{}`)
	var br bytes.Reader
	r := httptest.NewRequest(http.MethodPost, "/webhooks/stub", nil)
	r.Body, r.ContentLength = io.NopCloser(&br), int64(len(body))
	allocs := testing.AllocsPerRun(100, func() {
		br.Reset(body)
		clear(w.h)
		h.ServeHTTP(w, r)
	})
	t.Logf("%v allocations", allocs)
	require.LessOrEqual(t, allocs, 23.0)
}

// skipUnderRace skips a test that counts allocations when the race
// detector, whose instrumentation allocates, is on.
func skipUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
}
