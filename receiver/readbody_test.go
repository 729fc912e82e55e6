package receiver

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// readBody reads r's body as a delivery does, from a budget of its own of
// budget bytes, and returns it with what stays reserved for it. A read
// that fails leaves nothing reserved once released.
func readBody(t *testing.T, r *http.Request, limit, budget int64) ([]byte, int64, error) {
	p := pendingBody{budget: newBodyBudget(budget, -1)}
	body, err := p.read(httptest.NewRecorder(), r, limit)
	if err != nil {
		p.release()
		require.Zero(t, p.budget.held.Load(), "a failed read kept its reservation")
	}
	return body, p.held, err
}

// TestReadBody: the body arrives whole whatever its size relative to the
// chunks and the limit, whether its length is announced or not, and the
// limit holds either way. What stays reserved is the body's capacity, never
// more than the limit.
func TestReadBody(t *testing.T) {
	const limit = 3*maxBodyChunk + 7
	tests := []struct {
		name     string
		limit    int64 // limit if zero
		size     int
		announce int64 // -1: unknown (chunked)
		err      error
	}{
		{"empty", 0, 0, 0, nil},
		{"empty, unannounced", 0, 0, -1, nil},
		{"one byte", 0, 1, 1, nil},
		{"first chunk exactly", 0, firstBodyBuffer, firstBodyBuffer, nil},
		{"first chunk exactly, unannounced", 0, firstBodyBuffer, -1, nil},
		{"one past the first chunk", 0, firstBodyBuffer + 1, firstBodyBuffer + 1, nil},
		{"one past the first chunk, unannounced", 0, firstBodyBuffer + 1, -1, nil},
		{"several full chunks", 0, 2 * maxBodyChunk, 2 * maxBodyChunk, nil},
		{"at the limit", 0, limit, limit, nil},
		{"at the limit, unannounced", 0, limit, -1, nil},
		{"one under the limit", 0, limit - 1, limit - 1, nil},
		{"small, unannounced", 0, 10, -1, nil},
		{"over the limit, announced", 0, limit + 1, limit + 1, ErrTooLarge},
		{"over the limit, unannounced", 0, limit + 1, -1, ErrTooLarge},
		{"over the limit, announced under it", 0, limit + 1, 10, ErrTooLarge},
		{"shorter than announced", 0, 10, 20, providers.ErrMalformed},
		{"longer than announced", 0, 5000, 10, nil},
		{"limit of one byte", 1, 1, -1, nil},
		{"limit of one byte, over", 1, 2, -1, ErrTooLarge},
		// The largest limit WEBHOOKD_MAX_BODY_BYTES accepts: limit+1
		// overflowed and every delivery panicked (issue 26, item 5).
		{"largest limit", math.MaxInt64, 10, 10, nil},
		{"largest limit, unannounced", math.MaxInt64, 3*maxBodyChunk + 1, -1, nil},
		{"largest limit, largest announced", math.MaxInt64, 10, math.MaxInt64, providers.ErrMalformed},
		{"largest limit, one under the largest announced", math.MaxInt64, 10, math.MaxInt64 - 1, providers.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := tt.limit
			if lim == 0 {
				lim = limit
			}
			want := []byte(strings.Repeat("x", tt.size))
			r := httptest.NewRequest("POST", "/webhooks/stripe", nil)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(want)), tt.announce
			if tt.announce > int64(tt.size) {
				r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(want), errReader{io.ErrUnexpectedEOF}))
			}
			got, held, err := readBody(t, r, lim, lim)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, int64(cap(got)), held, "the body's capacity is what stays reserved")
			require.LessOrEqual(t, held, lim, "never more than the limit")
			if len(got) > maxBodyChunk {
				require.Equal(t, len(got), cap(got), "a body read in chunks is joined without free room")
			}
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// stalledUpload is a request whose body the test writes through a pipe,
// read by a delivery's pendingBody on its own goroutine.
type stalledUpload struct {
	w    *io.PipeWriter
	p    pendingBody
	done chan error
	body []byte
}

// startUpload starts reading a body of announced bytes from budget.
func startUpload(t *testing.T, budget *bodyBudget, limit, announced int64) *stalledUpload {
	pr, pw := io.Pipe()
	r := httptest.NewRequest("POST", "/webhooks/stripe", pr)
	r.ContentLength = announced
	u := &stalledUpload{w: pw, p: pendingBody{budget: budget}, done: make(chan error, 1)}
	go func() {
		body, err := u.p.read(httptest.NewRecorder(), r, limit)
		u.body = body
		u.done <- err
	}()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
	return u
}

// send writes n bytes of the body; it returns once the reader has taken
// them all (io.Pipe), so they are in memory reserved for them.
func (u *stalledUpload) send(t *testing.T, n int) {
	_, err := u.w.Write(bytes.Repeat([]byte("x"), n))
	require.NoError(t, err)
}

// TestStalledUploadsShareOneBudget is issue 26's item 3 in small: uploads
// that send all but their last byte and stall hold the shared budget, the
// next request is refused (ErrBusy, a 503) instead of growing memory, and
// once a stalled one ends its bytes are given back and a request is read
// again. The budget's reservations never exceed it.
func TestStalledUploadsShareOneBudget(t *testing.T) {
	const (
		limit   = 2*maxBodyChunk + 100
		stalled = 3
	)
	budget := newBodyBudget(stalled*limit, -1)
	within := func() {
		t.Helper()
		require.LessOrEqual(t, budget.held.Load(), budget.size, "reserved beyond the budget")
	}
	var uploads []*stalledUpload
	for range stalled {
		u := startUpload(t, budget, limit, limit)
		u.send(t, limit-1)
		within()
		uploads = append(uploads, u)
	}
	require.GreaterOrEqual(t, budget.held.Load(), int64(stalled*(limit-1)), "the stalled bytes are reserved")

	// A small request, even unannounced, finds no room.
	for _, announced := range []int64{100, -1} {
		late := startUpload(t, budget, limit, announced)
		// Refused before its first read: were it read, the pipe's end
		// would end it at once, without ErrBusy.
		require.NoError(t, late.w.Close())
		require.ErrorIs(t, <-late.done, ErrBusy)
		require.Zero(t, late.p.held, "a refused request holds nothing")
		within()
	}

	// One stalled upload gives up (a read timeout, a hang-up): its share
	// comes back once the delivery releases it.
	gone := uploads[0]
	gone.w.CloseWithError(io.ErrUnexpectedEOF)
	require.ErrorIs(t, <-gone.done, providers.ErrMalformed)
	gone.p.release()
	require.LessOrEqual(t, budget.held.Load(), int64((stalled-1)*limit))

	next := startUpload(t, budget, limit, 100)
	next.send(t, 100)
	require.NoError(t, next.w.Close())
	require.NoError(t, <-next.done)
	require.Len(t, next.body, 100)
	within()

	// The others finish: each whole body keeps exactly its own bytes
	// until it is verified, then nothing is left reserved.
	for _, u := range uploads[1:] {
		u.send(t, 1)
		require.NoError(t, u.w.Close())
		require.NoError(t, <-u.done)
		require.Len(t, u.body, limit)
		require.Equal(t, int64(limit), u.p.held)
		within()
	}
	for _, u := range append(uploads[1:], next) {
		u.p.release()
	}
	require.Zero(t, budget.held.Load())
}

// TestBusyWaitsForRoom: a request that finds the budget full waits for
// Config.BodyWait and is read once another gives its share back within it.
func TestBusyWaitsForRoom(t *testing.T) {
	const limit = 1000
	budget := newBodyBudget(limit, time.Minute)
	first := startUpload(t, budget, limit, limit)
	first.send(t, limit)
	require.NoError(t, first.w.Close())
	require.NoError(t, <-first.done)
	require.Equal(t, int64(limit), budget.held.Load())

	second := startUpload(t, budget, limit, 10)
	first.p.release() // before or after second starts to wait: it gets the room either way
	second.send(t, 10)
	require.NoError(t, second.w.Close())
	require.NoError(t, <-second.done)
	require.Equal(t, "xxxxxxxxxx", string(second.body))
	second.p.release()
}

// TestBusyWaitEndsWithTheRequest: a request waiting for room stops when its
// context ends (the client hung up), well before a long BodyWait.
func TestBusyWaitEndsWithTheRequest(t *testing.T) {
	budget := newBodyBudget(10, time.Hour)
	require.NoError(t, budget.reserve(context.Background(), 10))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, budget.reserve(ctx, 1), ErrBusy)
	budget.release(10)
	require.Zero(t, budget.held.Load())
}

// stepReader hands out its bytes at most step at a time, as a slow
// connection does.
type stepReader struct {
	b    []byte
	step int
}

func (s *stepReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), s.step)], s.b)
	s.b = s.b[n:]
	return n, nil
}

// FuzzReadBody: whatever the body, the limit, whether the length is
// announced and how the bytes trickle in, a body within the limit arrives
// whole in memory reserved for exactly its capacity (never more than the
// limit), a larger one is ErrTooLarge, and releasing gives every byte back.
func FuzzReadBody(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1"}`), uint32(1<<20), true, uint16(0), false)
	f.Add(bytes.Repeat([]byte("x"), 3*maxBodyChunk), uint32(3*maxBodyChunk), false, uint16(1000), false)
	f.Add([]byte("xx"), uint32(1), true, uint16(1), false)
	f.Add([]byte("x"), uint32(0), false, uint16(7), true)
	f.Fuzz(func(t *testing.T, body []byte, limit32 uint32, announced bool, step uint16, largest bool) {
		limit := int64(limit32%(1<<20)) + 1
		if largest {
			limit = math.MaxInt64
		}
		r := httptest.NewRequest("POST", "/webhooks/stripe", nil)
		r.Body = io.NopCloser(&stepReader{b: body, step: int(step) + 1})
		r.ContentLength = -1
		if announced {
			r.ContentLength = int64(len(body))
		}
		budget := newBodyBudget(limit, -1)
		p := pendingBody{budget: budget}
		got, err := p.read(httptest.NewRecorder(), r, limit)
		if int64(len(body)) > limit {
			require.ErrorIs(t, err, ErrTooLarge)
		} else {
			require.NoError(t, err)
			require.Equal(t, body, got)
			require.Equal(t, int64(cap(got)), p.held)
			require.LessOrEqual(t, p.held, limit)
		}
		require.LessOrEqual(t, budget.held.Load(), limit)
		p.release()
		require.Zero(t, budget.held.Load())
	})
}
