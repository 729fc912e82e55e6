// Package logbuf is group commit for log lines: a Writer that takes each
// line at once and writes whatever has accumulated in one Write to the file
// underneath, so a busy server pays one write(2) for many lines instead of
// one per line, and no logging goroutine waits on the syscall.
//
// Write appends its bytes to a buffer under a mutex and returns. A single
// flusher goroutine takes the buffer (swapping in a second one, so appends
// go on during the syscall) and writes it in one Write. There is no timer:
// an idle flusher is woken by the first line, so a lone line reaches the
// file at once; lines that arrive while a write is under way go out
// together in the next one. Each Write's bytes stay whole and in order, so
// a log/slog handler, which calls Write once per record, never sees its
// lines interleave.
//
// The buffer is bounded (New's maxPending): once that many bytes wait, Write
// blocks until the flusher takes them. No line is ever dropped; a slow
// reader of the file slows the loggers, as direct writes would.
//
// What a crash can lose: a process ended without a Flush (kill -9, an
// unrecovered panic on a goroutine other than the one that flushes, a
// fatal runtime error) loses the lines accepted and not yet written. Under
// load that is the lines of one write in progress; but the lines a
// goroutine wrote just before it panicked are often among them (with
// GOMAXPROCS=1 nearly always: the flusher has not run yet). When the
// file's reader has stalled it is up to maxPending bytes, which a direct
// write would have held its logging goroutines on instead. Every orderly
// exit must call Flush or Close.
package logbuf

import (
	"io"
	"sync"
)

// DefaultMaxPending is the bound on bytes waiting to be written that New
// uses when given none.
const DefaultMaxPending = 1 << 20

// Writer is a coalescing io.Writer over another one. Make it with New; it
// is safe for concurrent use.
type Writer struct {
	out        io.Writer
	maxPending int
	wake       chan struct{} // holds one signal: there is something to write

	mu       sync.Mutex
	cond     sync.Cond // broadcast when the flusher takes the buffer, writes it, or stops
	buf      []byte    // accepted, not yet taken by the flusher
	spare    []byte    // the buffer last written, reused for the next batch
	accepted int64     // bytes ever appended to buf: Flush's target
	written  int64     // bytes the flusher has passed to out
	err      error     // the first error out returned
	closed   bool      // Close was called: wake is closed
	stopped  bool      // the flusher has written everything and exited
}

// New returns a Writer that writes to out through one flusher goroutine,
// which runs until Close. maxPending bounds the bytes waiting to be written
// (DefaultMaxPending if not positive).
func New(out io.Writer, maxPending int) *Writer {
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	w := &Writer{out: out, maxPending: maxPending, wake: make(chan struct{}, 1)}
	w.cond.L = &w.mu
	go w.flush()
	return w
}

// Write accepts p and returns len(p), nil without waiting for the write to
// out, unless maxPending bytes are already waiting: then it blocks until the
// flusher has taken them. Errors from out are kept for Flush and Close to
// report; later lines are still written, each batch tried on its own, so a
// passing failure loses only the batch it hit. After Close, Write writes
// straight to out and returns its result: a late line is still written.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.buf) >= w.maxPending && !w.stopped {
		w.cond.Wait()
	}
	if w.stopped {
		return w.out.Write(p)
	}
	// A non-empty buffer has already woken the flusher, which writes until
	// the buffer is empty; only the first line of a batch signals.
	if len(w.buf) == 0 && !w.closed {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	w.buf = append(w.buf, p...)
	w.accepted += int64(len(p))
	return len(p), nil
}

// Flush waits until every byte accepted before it was called has been
// written to out and returns the first error out has returned, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.accepted
	for w.written < target && !w.stopped {
		w.cond.Wait()
	}
	return w.err
}

// Close writes everything pending, stops the flusher, and returns the first
// error out has returned, if any. It may be called more than once, also
// concurrently; every call waits for the last write.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.wake)
	}
	for !w.stopped {
		w.cond.Wait()
	}
	return w.err
}

// flush is the flusher goroutine: woken by the first line of a batch, it
// writes until the buffer is empty; once Close has closed wake it writes
// what is left and stops.
func (w *Writer) flush() {
	for range w.wake {
		w.drain()
	}
	w.drain()
}

// drain writes the buffer, one Write per batch, until it is empty.
func (w *Writer) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.buf) > 0 {
		batch := w.buf
		w.buf = w.spare[:0]
		w.cond.Broadcast() // room for blocked writers
		w.mu.Unlock()
		_, err := w.out.Write(batch)
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		w.spare = batch
		w.written += int64(len(batch))
		w.cond.Broadcast() // for Flush
	}
	if w.closed {
		// Nothing can be appended from here on: Write sees stopped and
		// writes straight to out.
		w.stopped = true
		w.cond.Broadcast()
	}
}
