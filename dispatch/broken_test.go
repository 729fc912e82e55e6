package dispatch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dispatch"
)

// brokenAnswer returns a handler that sends the status line and headers of
// status, then breaks the body: cut writes 10 of the 100 bytes its
// Content-Length announces and closes the connection; stall writes those 10
// bytes and then waits, past any dispatch timeout, until the test ends.
func brokenAnswer(t *testing.T, status int, stall bool, hits *atomic.Int32) http.HandlerFunc {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n%s",
			status, http.StatusText(status), `{"ok":true`)
		_ = buf.Flush()
		if stall {
			<-done
		}
	}
}

// TestForwardBrokenBodyIsClassifiedByStatusLine: once the status line has
// arrived the core service has acted, so a body cut short or stalled does not
// make the answer Unavailable (which would release the key and invite a
// second forward), and retryablehttp does not send the request again.
func TestForwardBrokenBodyIsClassifiedByStatusLine(t *testing.T) {
	tests := []struct {
		name   string
		status int
		stall  bool
		want   dispatch.Outcome
	}{
		{"200, Content-Length never filled", http.StatusOK, false, dispatch.Delivered},
		{"200, body stalls past the timeout", http.StatusOK, true, dispatch.Delivered},
		{"201, body stalls past the timeout", http.StatusCreated, true, dispatch.Delivered},
		{"422, Content-Length never filled", http.StatusUnprocessableEntity, false, dispatch.Rejected},
		{"400, body stalls past the timeout", http.StatusBadRequest, true, dispatch.Rejected},
		{"503, Content-Length never filled", http.StatusServiceUnavailable, false, dispatch.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(brokenAnswer(t, tt.status, tt.stall, &hits))
			t.Cleanup(srv.Close)
			f := newForwarder(t, srv.URL, func(o *dispatch.Options) {
				o.Timeout = 300 * time.Millisecond
				o.Retries = 2
			})

			start := time.Now()
			res := f.Forward(context.Background(), testRequest())

			require.Less(t, time.Since(start), 2*time.Second)
			require.Equal(t, tt.want, res.Outcome, "err: %v", res.Err)
			require.Equal(t, tt.status, res.Status)
			require.Equal(t, "application/json", res.ContentType)
			require.Error(t, res.Err, "the broken body is reported")
			if tt.want != dispatch.Unavailable {
				require.Equal(t, `{"ok":true`, string(res.Body), "what arrived of the body is kept")
				require.Equal(t, 1, res.Attempts)
				require.EqualValues(t, 1, hits.Load(), "an answer with a status line is not sent again")
			} else {
				require.GreaterOrEqual(t, hits.Load(), int32(2), "a 5xx is still retried")
				require.EqualValues(t, hits.Load(), res.Attempts)
			}
		})
	}
}
