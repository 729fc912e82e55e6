package dispatch_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dispatch"
)

// answerTransport answers every request 200 in memory, after reading its
// body, so that an allocation count sees only the forwarder and net/http's
// client, not a server or a connection.
type answerTransport struct{ body []byte }

func (a answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(a.body)),
		ContentLength: int64(len(a.body)), Request: r,
	}, nil
}

// TestForwardAllocations bounds what one delivered forward allocates, with
// every header set. The bound holds three choices of the forwarder: the
// budget's context is the only deadline (http.Client.Timeout on top would
// arm a context, a timer and their closures per attempt), the headers'
// values share one allocation, and the answer is read into a buffer sized
// by its Content-Length (io.ReadAll and two io.LimitReaders cost 2 more).
func TestForwardAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	f, err := dispatch.New(dispatch.Options{
		URL: "http://core.internal/events", Timeout: 10 * time.Second, Retries: 2,
		Transport: answerTransport{body: []byte(`{"ok":true}`)},
	})
	require.NoError(t, err)
	req := dispatch.Request{
		Provider: "stripe", IdempotencyKey: "stripe:evt_1", EventKey: "evt_1",
		EventType: "payment_intent.succeeded", Body: []byte(`{"id":"evt_1"}`),
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		res := f.Forward(ctx, req)
		if res.Outcome != dispatch.Delivered || !strings.Contains(string(res.Body), "ok") {
			t.Fatalf("%+v", res)
		}
	})
	t.Logf("%v allocations", allocs)
	require.LessOrEqual(t, allocs, 33.0)
}
