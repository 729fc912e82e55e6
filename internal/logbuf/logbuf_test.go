package logbuf_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/internal/logbuf"
)

// wait bounds every wait for something another goroutine does: generous,
// so that only a real failure runs it out.
const wait = 10 * time.Second

// sink is the writer under a Writer. It keeps what it is given, tells
// arrived as each Write begins, holds each Write until gate is closed (if it
// has one), and answers every Write with fail.
type sink struct {
	arrived chan struct{}
	gate    chan struct{}
	release func() // closes gate; may be called more than once

	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	fail   error
}

func newSink() *sink { return &sink{arrived: make(chan struct{}, 1000)} }

// newHeldSink returns a sink whose Writes wait for release. A test defers
// release after deferring Close, so that a failure does not leave Close
// waiting on a held write.
func newHeldSink() *sink {
	s := newSink()
	s.gate = make(chan struct{})
	s.release = sync.OnceFunc(func() { close(s.gate) })
	return s
}

func (s *sink) Write(p []byte) (int, error) {
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.fail != nil {
		return 0, s.fail
	}
	return s.buf.Write(p)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *sink) failWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// awaitWrite waits until the sink's next Write has begun.
func (s *sink) awaitWrite(t *testing.T) {
	t.Helper()
	select {
	case <-s.arrived:
	case <-time.After(wait):
		t.Fatal("no Write reached the underlying writer")
	}
}

func TestConcurrentWritersKeepLinesWholeAndInOrder(t *testing.T) {
	tests := []struct {
		name       string
		maxPending int
	}{
		{"default cap", 0},
		// Below one line: every Write after the first waits for the
		// flusher, so the blocking path is taken all the time.
		{"cap below a line", 4},
	}
	const writers, lines = 8, 500
	line := func(g, i int) string { return fmt.Sprintf("writer=%d line=%d %s\n", g, i, strings.Repeat("x", i%50)) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := newSink()
			w := logbuf.New(out, tt.maxPending)
			errs := make(chan error, writers*lines)
			var wg sync.WaitGroup
			for g := range writers {
				wg.Go(func() {
					for i := range lines {
						_, err := io.WriteString(w, line(g, i))
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, w.Close())

			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			require.Len(t, got, writers*lines, "every line is written")
			next := make([]int, writers)
			for _, l := range got {
				var g, i int
				_, err := fmt.Sscanf(l, "writer=%d line=%d", &g, &i)
				require.NoError(t, err, "a whole line: %q", l)
				require.Equal(t, next[g], i, "writer %d's lines in its order", g)
				require.Equal(t, line(g, i), l+"\n", "a whole line")
				next[g]++
			}
			out.mu.Lock()
			defer out.mu.Unlock()
			t.Logf("%d lines in %d writes", writers*lines, out.writes)
		})
	}
}

func TestALoneLineIsWrittenAtOnce(t *testing.T) {
	out := newSink()
	w := logbuf.New(out, 0)
	defer w.Close()
	_, err := w.Write([]byte("lone\n"))
	require.NoError(t, err)
	out.awaitWrite(t) // no Close, no second Write, no timer
	require.Eventually(t, func() bool { return out.String() == "lone\n" }, wait, time.Millisecond)
}

func TestLinesDuringAWriteGoOutTogetherInTheNext(t *testing.T) {
	out := newHeldSink()
	w := logbuf.New(out, 0)
	defer w.Close()
	defer out.release()
	_, err := w.Write([]byte("one\n"))
	require.NoError(t, err)
	out.awaitWrite(t) // the flusher is stuck writing "one"
	for _, l := range []string{"two\n", "three\n"} {
		_, err := w.Write([]byte(l))
		require.NoError(t, err)
	}
	out.release()
	out.awaitWrite(t) // no Close, no Flush, no further Write
	require.Eventually(t, func() bool { return out.String() == "one\ntwo\nthree\n" }, wait, time.Millisecond)
	out.mu.Lock()
	defer out.mu.Unlock()
	require.Equal(t, 2, out.writes, "two and three in one write")
}

func TestFlushWaitsForWhatWasWritten(t *testing.T) {
	out := newHeldSink()
	w := logbuf.New(out, 0)
	defer w.Close()
	defer out.release()
	_, err := w.Write([]byte("one\n"))
	require.NoError(t, err)
	out.awaitWrite(t)
	_, err = w.Write([]byte("two\n")) // accepted at once; goes out after the stuck write
	require.NoError(t, err)
	out.release()
	require.NoError(t, w.Flush())
	require.Equal(t, "one\ntwo\n", out.String())
}

// blockedInWrite reports whether some goroutine is parked inside
// Writer.Write, waiting for room: blocked, not merely not yet scheduled.
func blockedInWrite() bool {
	buf := make([]byte, 1<<20)
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[sync.Cond.Wait") && strings.Contains(g, "logbuf.(*Writer).Write(") {
			return true
		}
	}
	return false
}

func TestWriteBlocksAtTheCapUntilTheWriterMoves(t *testing.T) {
	out := newHeldSink()
	w := logbuf.New(out, 8)
	defer out.release()
	_, err := w.Write([]byte("first\n"))
	require.NoError(t, err)
	out.awaitWrite(t) // the flusher took "first" and is stuck writing it
	_, err = w.Write([]byte("second line\n"))
	require.NoError(t, err, "under the cap when it came: accepted at once")

	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("third\n"))
		done <- err
	}()
	require.Eventually(t, blockedInWrite, wait, time.Millisecond, "Write waits while 12 bytes > cap 8 are pending")
	require.Empty(t, out.String())

	out.release()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("Write still blocked after the underlying writer moved on")
	}
	require.NoError(t, w.Close())
	require.Equal(t, "first\nsecond line\nthird\n", out.String())
}

func TestWriteErrors(t *testing.T) {
	errFirst, errSecond := errors.New("first failure"), errors.New("second failure")
	tests := []struct {
		name    string
		fails   []error // the underlying writer's answer to each flushed line
		want    error   // from Flush after the last line and from Close
		written string  // what the underlying writer kept
	}{
		{"none", []error{nil, nil}, nil, "0\n1\n"},
		{"the first error is kept", []error{errFirst, errSecond}, errFirst, ""},
		{"lines after a failure are still written", []error{errFirst, nil}, errFirst, "1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := newSink()
			w := logbuf.New(out, 0)
			for i, fail := range tt.fails {
				out.failWith(fail)
				n, err := fmt.Fprintf(w, "%d\n", i)
				require.NoError(t, err, "Write does not wait for the outcome")
				require.Equal(t, 2, n)
				_ = w.Flush() // one line per underlying Write
			}
			require.ErrorIs(t, w.Flush(), tt.want)
			require.ErrorIs(t, w.Close(), tt.want)
			require.ErrorIs(t, w.Close(), tt.want, "Close again: the same answer")
			require.Equal(t, tt.written, out.String())
		})
	}
}

func TestCloseIsIdempotentAndConcurrent(t *testing.T) {
	out := newSink()
	w := logbuf.New(out, 0)
	_, err := w.Write([]byte("line\n"))
	require.NoError(t, err)
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() { errs <- w.Close() }()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
	require.Equal(t, "line\n", out.String(), "every Close waits for the last write")
}

func TestWriteAfterCloseGoesStraightThrough(t *testing.T) {
	out := newSink()
	w := logbuf.New(out, 0)
	require.NoError(t, w.Close())
	n, err := w.Write([]byte("late\n"))
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, "late\n", out.String(), "written before Write returned")

	errLate := errors.New("gone")
	out.failWith(errLate)
	_, err = w.Write([]byte("later\n"))
	require.ErrorIs(t, err, errLate, "with nothing left to report it, Write returns the error itself")
}
