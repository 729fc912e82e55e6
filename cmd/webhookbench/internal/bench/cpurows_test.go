package bench

import (
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
)

func TestRowOfTakesTheFirstRowOnTheStack(t *testing.T) {
	stack := func(funcs ...string) *profile.Sample {
		s := &profile.Sample{}
		for _, f := range funcs {
			s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: f}}}})
		}
		return s
	}
	for _, tc := range []struct {
		sample *profile.Sample
		want   string
	}{
		{stack("runtime.cgocall", "github.com/PowerDNS/lmdb-go/lmdb._Cfunc_mdb_txn_commit", "github.com/webhookd/webhookd/dedupe/lmdb.(*Store).writeLoop"), "store writer: LMDB commit and its ops (cgo, pwrite, fdatasync)"},
		{stack("runtime.mallocgc", "github.com/webhookd/webhookd/dedupe/lmdb.(*Store).Peek", "github.com/webhookd/webhookd/receiver.boundedStore.Claim", "github.com/webhookd/webhookd/receiver.(*handler).receive", "net/http.(*conn).serve"), "store callers: claim, answer, peek (read txn, queueing)"},
		{stack("crypto/internal/fips140/sha256.blockSHANI", "github.com/webhookd/webhookd/providers/spec.(*Provider).fingerprint", "github.com/webhookd/webhookd/receiver.parse", "github.com/webhookd/webhookd/receiver.(*handler).receive"), "parser (event key, fingerprint)"},
		{stack("crypto/hmac.(*HMAC).Write", "github.com/webhookd/webhookd/providers/spec.(*Provider).Verify", "github.com/webhookd/webhookd/receiver.(*handler).receive"), "verifier (HMAC, signature header)"},
		{stack("log/slog.(*handleState).appendAttr", "github.com/webhookd/webhookd/receiver.(*handler).logDelivery"), "logging (slog, logbuf)"},
		{stack("syscall.write", "net/http.(*persistConn).writeLoop"), "forward: retryablehttp + net/http client"},
		{stack("io.copyBuffer", "net/http/httputil.(*ReverseProxy).ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"), "forward: retryablehttp + net/http client"},
		{stack("net/textproto.readMIMEHeader", "net/http.readRequest", "net/http.(*conn).readRequest", "net/http.(*conn).serve"), "net/http server (read request, write reply)"},
		{stack("runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"), "GC (background)"},
		{stack("runtime.findRunnable", "runtime.schedule"), "scheduler, netpoll, other runtime"},
		{stack("main.main"), otherRow},
	} {
		require.Equal(t, tc.want, rowOf(tc.sample))
	}
}
