package receiver

import (
	"errors"
	"io"
	"net/http"

	"github.com/webhookd/webhookd/providers"
)

// firstBodyBuffer is how much readBody sets aside before a byte has
// arrived: most provider events fit in it.
const firstBodyBuffer = 4 << 10

// readBody reads the body, up to limit bytes. A Content-Length over the
// limit is refused before reading. Otherwise the buffer grows with the bytes
// that arrive, doubling up to limit: the announced length is the client's
// word, and sizing the buffer from it would let unauthenticated connections
// that send nothing hold limit bytes each for the whole read timeout.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, ErrTooLarge
	}
	size := int64(firstBodyBuffer)
	if r.ContentLength >= 0 && r.ContentLength < size {
		// One byte more than announced, so the read that sees EOF needs
		// no second buffer.
		size = r.ContentLength + 1
	}
	buf := make([]byte, 0, min(size, limit+1))
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			// Room for limit+1 at most: MaxBytesReader fails the read
			// past the limit.
			next := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(next, buf)
			buf = next
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return buf, nil
		default:
			return nil, readError(err)
		}
	}
}

// readError names why a body could not be read. It is apart from readBody
// because errors.As needs its target on the heap: declared in readBody's
// loop, it cost an allocation per read of every body.
func readError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return ErrTooLarge
	}
	return errors.Join(providers.ErrMalformed, err)
}
