package receiver

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// recoverer turns a panic in a handler into a bare 500: the client learns
// nothing but the status, and the log gets the panic and its stack at Error
// level. It replaces chi's Recoverer, which writes the stack to stderr
// outside the structured log.
//
// http.ErrAbortHandler is re-raised: it is net/http's way for a handler to
// abort a response on purpose, and the server handles it quietly.
func (h *handler) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			// debug.Stack, called while the panic unwinds, still shows the
			// frame that panicked.
			h.Logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("panic", fmt.Sprint(p)),
				slog.String("stack", string(debug.Stack())))
			if !tw.wroteHeader {
				writeError(tw, http.StatusInternalServerError, http.StatusText(http.StatusInternalServerError))
			}
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter records whether the response has started, so that the
// recoverer does not write a second status line.
type trackingWriter struct {
	http.ResponseWriter
	wroteHeader bool
}

func (t *trackingWriter) WriteHeader(status int) {
	t.wroteHeader = true
	t.ResponseWriter.WriteHeader(status)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wroteHeader = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's own writer
// (flushing, deadlines).
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
