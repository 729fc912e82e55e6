package receiver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/webhookd/webhookd/providers"
)

// Bodies are read before their signature can be checked, so anyone can
// send one. Each body's bytes are reserved from one budget shared by every
// request (Config.MaxPendingBodyBytes) as they arrive, and given back once
// Verify has judged the body: however many connections upload slowly or
// stall, the bodies not yet verified hold at most the budget. Past it, a
// request waits a moment (Config.BodyWait) for another to give bytes back,
// then is answered 503 with Retry-After (ErrBusy). A stalled upload keeps
// its share until the server's read timeout cuts it
// (docs/operating.md, "Bodies not yet verified").

// DefaultMaxPendingBodyBytes is Config.MaxPendingBodyBytes when zero:
// sixty-four bodies at the default WEBHOOKD_MAX_BODY_BYTES (1 MiB).
const DefaultMaxPendingBodyBytes = 64 << 20

// DefaultBodyWait is Config.BodyWait when zero: long enough to ride out a
// burst, short against the tens of seconds a gateway waits for its answer.
const DefaultBodyWait = time.Second

// firstBodyBuffer is the first chunk a body is read into: most provider
// events fit in it.
const firstBodyBuffer = 4 << 10

// maxBodyChunk caps every later chunk, so that a stalled upload holds at
// most this much reserved beyond the bytes it has sent.
const maxBodyChunk = 64 << 10

// bodyBudget is the byte budget shared by the bodies being read.
type bodyBudget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
	// held is what is reserved now, for tests to watch.
	held atomic.Int64
}

func newBodyBudget(size int64, wait time.Duration) *bodyBudget {
	return &bodyBudget{sem: semaphore.NewWeighted(size), size: size, wait: wait}
}

// reserve takes n bytes, waiting at most b.wait (or until ctx is done) for
// other requests to give some back.
func (b *bodyBudget) reserve(ctx context.Context, n int64) error {
	if !b.sem.TryAcquire(n) {
		if b.wait <= 0 {
			return ErrBusy
		}
		ctx, cancel := context.WithTimeout(ctx, b.wait)
		defer cancel()
		if err := b.sem.Acquire(ctx, n); err != nil {
			return ErrBusy
		}
	}
	b.held.Add(n)
	return nil
}

func (b *bodyBudget) release(n int64) {
	b.held.Add(-n)
	b.sem.Release(n)
}

// pendingBody is one request's body while it is read and verified, and the
// share of the budget it holds; after release it holds nothing.
type pendingBody struct {
	budget *bodyBudget
	held   int64
}

// release gives back what p holds; it may be called more than once.
func (p *pendingBody) release() {
	if p.held > 0 {
		p.budget.release(p.held)
		p.held = 0
	}
}

// reserve adds n bytes to p's share.
func (p *pendingBody) reserve(ctx context.Context, n int64) error {
	if err := p.budget.reserve(ctx, n); err != nil {
		return err
	}
	p.held += n
	return nil
}

// read reads r's body, up to limit bytes, into memory reserved from the
// budget as the bytes arrive; the caller releases p when the body has been
// verified (or refused). A Content-Length over the limit is refused before
// reading. Otherwise the announced length only caps the chunks: it is the
// client's word, and reserving or allocating by it would let connections
// that send nothing hold memory. Chunks grow with what has arrived, up to
// maxBodyChunk, so no chunk is ever copied while the body is read: the
// memory held is the bytes sent plus at most one chunk's free room. Only a
// body that came whole is copied once into one slice, which takes over the
// chunks' reservation (they are garbage from then on).
func (p *pendingBody) read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, ErrTooLarge
	}
	// end is how far reading goes before it must ask whether more
	// follows: one byte more than announced, so that the read that sees
	// EOF needs no further chunk, and never past the limit.
	end := limit
	if r.ContentLength >= 0 && r.ContentLength < limit {
		end = r.ContentLength + 1
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var (
		chunk  []byte   // being filled
		filled [][]byte // filled before it
		read   int64    // bytes in filled
	)
	for {
		dst, probing := chunk[len(chunk):cap(chunk)], false
		if len(dst) == 0 {
			got := read + int64(len(chunk))
			switch {
			case got == limit:
				// One byte more is over the limit: MaxBytesReader
				// answers EOF or its error, never a byte.
				var probe [1]byte
				dst, probing = probe[:], true
			case got == end:
				// Longer than announced (a transport that does not
				// hold a body to its length): read on to the limit.
				end = limit
				fallthrough
			default:
				if cap(chunk) > 0 {
					filled = append(filled, chunk)
					read = got
				}
				size := min(max(got, firstBodyBuffer), maxBodyChunk, end-got)
				if err := p.reserve(r.Context(), size); err != nil {
					return nil, err
				}
				chunk = make([]byte, 0, size)
				dst = chunk[:size]
			}
		}
		n, err := body.Read(dst)
		if !probing {
			chunk = chunk[:len(chunk)+n]
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return p.join(filled, chunk, read), nil
		default:
			return nil, readError(err)
		}
	}
}

// join returns the body read into filled and last (read bytes are in
// filled), as one slice.
func (p *pendingBody) join(filled [][]byte, last []byte, read int64) []byte {
	if len(filled) == 0 {
		return last
	}
	body := make([]byte, 0, read+int64(len(last)))
	for _, c := range filled {
		body = append(body, c...)
	}
	body = append(body, last...)
	// The chunks were reserved with their free room; the body has none.
	if spare := p.held - int64(len(body)); spare > 0 {
		p.budget.release(spare)
		p.held -= spare
	}
	return body
}

// readError names why a body could not be read. It is apart from read
// because errors.As needs its target on the heap: declared in read's
// loop, it cost an allocation per read of every body.
func readError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return ErrTooLarge
	}
	return errors.Join(providers.ErrMalformed, err)
}
