package dispatch_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dispatch"
)

// TestForwardAttemptsCountWhatTheCoreSaw: net/http's transport resends a
// request carrying Idempotency-Key on its own when a reused keep-alive
// connection fails after the request was written, which retryablehttp never
// sees. Here the core reads the second request on a reused connection and
// drops it; Attempts must match the requests the core counted.
func TestForwardAttemptsCountWhatTheCoreSaw(t *testing.T) {
	for _, retries := range []int{0, 2} {
		t.Run(fmt.Sprintf("retries=%d", retries), func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewUnstartedServer(nil)
			srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, connServed{}, new(atomic.Int32))
			}
			srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				if r.Context().Value(connServed{}).(*atomic.Int32).Add(1) > 1 {
					// The second request on a connection: it arrived, and
					// the core hangs up without answering.
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						_ = conn.Close()
					}
					return
				}
				_, _ = w.Write([]byte("ok"))
			})
			srv.Start()
			t.Cleanup(srv.Close)
			f := newForwarder(t, srv.URL, func(o *dispatch.Options) { o.Retries = retries })

			first := f.Forward(context.Background(), testRequest())
			require.Equal(t, dispatch.Delivered, first.Outcome, "err: %v", first.Err)
			require.EqualValues(t, 1, hits.Load())
			require.Equal(t, 1, first.Attempts)

			hits.Store(0)
			second := f.Forward(context.Background(), testRequest())
			require.EqualValues(t, hits.Load(), second.Attempts,
				"attempts reported must be the requests the core received (outcome %s, err %v)", second.Outcome, second.Err)
			if retries == 0 {
				require.Equal(t, dispatch.Unavailable, second.Outcome, "no retries means one request")
			} else {
				require.Equal(t, dispatch.Delivered, second.Outcome, "err: %v", second.Err)
				require.Equal(t, 2, second.Attempts)
			}
		})
	}
}

type connServed struct{}
