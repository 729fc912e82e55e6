// Package sink is a local stand-in for the core service (`webhookd sink`):
// an HTTP handler that prints one line for each event webhookd forwards and
// answers with a status of the operator's choosing, so that the whole path
// can be watched on one machine and a failing core service rehearsed.
//
// It prints headers and the body's size, never the body: forwarded bodies
// are payment data. It must never be used as a real core service: it acts
// on nothing.
package sink

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxBodyBytes is how much of a request body the sink reads (and counts);
// beyond it the request is answered 413, as a real service would.
const MaxBodyBytes = 16 << 20

// Headers are the headers webhookd sets on a forward, printed in this order
// after the time.
var Headers = []string{"Webhook-Source", "Webhook-Provider", "Idempotency-Key", "Webhook-Event-Type", "Webhook-Event-Id", "Content-Type"}

// Handler prints each request it receives to out and answers status.
type Handler struct {
	status int
	now    func() time.Time

	mu  sync.Mutex // one line at a time
	out io.Writer
}

// New returns a Handler that answers status (200 to 599) and prints to out.
// A nil now means time.Now.
func New(out io.Writer, status int, now func() time.Time) (*Handler, error) {
	if status < 200 || status > 599 {
		return nil, fmt.Errorf("sink: status %d is not a final HTTP status (200 to 599)", status)
	}
	if now == nil {
		now = time.Now
	}
	return &Handler{out: out, status: status, now: now}, nil
}

// ServeHTTP reads the body, prints one line (time, method and path when
// they are not POST /, the webhookd headers, body size) and answers with a
// small JSON body: {"received":true,...} for a 2xx, {"error":...} otherwise.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	status := h.status
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		status = http.StatusRequestEntityTooLarge
	}
	h.print(r, n, status, err)

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	answer := map[string]any{"received": true, "idempotency_key": r.Header.Get("Idempotency-Key")}
	switch {
	case status == http.StatusRequestEntityTooLarge:
		answer = map[string]any{"error": "body larger than the sink reads"}
	case status < 200 || status > 299:
		answer = map[string]any{"error": "webhookd sink answers " + strconv.Itoa(status) + " (--status)"}
	}
	_ = json.NewEncoder(w).Encode(answer)
}

func (h *Handler) print(r *http.Request, n int64, status int, readErr error) {
	var b strings.Builder
	b.WriteString(h.now().Format("15:04:05.000"))
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		fmt.Fprintf(&b, " %s %s", r.Method, quote(r.URL.RequestURI()))
	}
	for _, name := range Headers {
		v := r.Header.Get(name)
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(&b, " %s=%s", name, quote(v))
	}
	fmt.Fprintf(&b, " body=%dB", n)
	if readErr != nil {
		b.WriteString(" (body cut: " + quote(readErr.Error()) + ")")
	}
	fmt.Fprintf(&b, " -> %d\n", status)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = io.WriteString(h.out, b.String())
}

// quote leaves a plain value as it is and quotes one with spaces, quotes or
// control characters, so that no request can forge or garble a line of the
// sink's output.
func quote(s string) string {
	for _, c := range s {
		if c <= ' ' || c == '"' || c == 0x7f || c > '~' {
			return strconv.Quote(s)
		}
	}
	return s
}
