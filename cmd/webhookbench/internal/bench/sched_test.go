package bench

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/trace"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		funcs []string
		want  string
	}{
		{[]string{"runtime.selectgo", "github.com/webhookd/webhookd/dedupe/lmdb.(*Store).send", "github.com/webhookd/webhookd/dedupe/lmdb.(*Store).Claim", "net/http.(*conn).serve"}, "the store (a claim or an enqueue)"},
		{[]string{"runtime.selectgo", "github.com/webhookd/webhookd/dedupe/postgres.(*Store).send", "github.com/webhookd/webhookd/dedupe/postgres.(*Store).Enqueue"}, "the store (a claim or an enqueue)"},
		{[]string{"runtime.selectgo", "github.com/webhookd/webhookd/dedupe/lmdb.(*Store).settleAnswer", "github.com/webhookd/webhookd/dedupe/lmdb.(*Store).Complete"}, "the store (an answer, a release or a read)"},
		{[]string{"runtime.selectgo", "net/http.(*persistConn).roundTrip", "github.com/webhookd/webhookd/dispatch.(*Forwarder).Forward"}, "the core's answer to a forward"},
		{[]string{"runtime.selectgo", "net/http.(*persistConn).roundTrip", "net/http/httputil.(*ReverseProxy).ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}, "the core's answer to a forward"},
		{[]string{"internal/poll.(*FD).Read", "net/http.(*connReader).Read", "bufio.(*Reader).fill", "net/http.(*conn).readRequest", "net/http.(*conn).serve"}, "the client's next request"},
		{[]string{"sync.(*Mutex).Lock", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}, "other (sync.(*Mutex).Lock)"},
		{nil, "other"},
	} {
		require.Equal(t, tc.want, classify(tc.funcs), "%v", tc.funcs)
	}
}

// fakeWriteLoop answers each request's op, as a store writer does.
func fakeWriteLoop(ops chan chan struct{}) {
	for done := range ops {
		done <- struct{}{}
	}
}

// TestReadSchedSplitsAServersTime traces a server whose handler waits for
// a writer goroutine, and reads back both kinds of goroutine.
func TestReadSchedSplitsAServersTime(t *testing.T) {
	ops := make(chan chan struct{})
	defer close(ops)
	go fakeWriteLoop(ops)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done := make(chan struct{})
		ops <- done
		<-done
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	for range 50 {
		resp, err := srv.Client().Get(srv.URL)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	trace.Stop()

	rep, err := readSched(&buf, "bench.fakeWriteLoop")
	require.NoError(t, err)
	require.Positive(t, rep.span)
	require.Positive(t, rep.handlers[schedRunning])
	require.Positive(t, rep.handlers["waiting: the client's next request"], "%v", rep.handlers)
	require.Positive(t, rep.writer["waiting: its queue (the next op, or the gather's timer)"], "%v", rep.writer)
	require.NotEmpty(t, rep.wakes, "the writer was woken for every op")

	var out bytes.Buffer
	rep.write(&out, "t.trace")
	require.Contains(t, out.String(), "| HTTP server goroutines | goroutine-seconds | share |")
	require.Contains(t, out.String(), "| store writer | goroutine-seconds | share |")
}
