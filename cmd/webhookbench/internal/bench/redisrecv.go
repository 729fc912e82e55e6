package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

// redisInFlight is the value of a claimed key whose forward has not ended.
const redisInFlight = "inflight"

// redisReceiver is the design webhookd replaces, as it is usually written:
// verify, SET key NX PX lease, forward, store the answer under the key,
// replay it to duplicates; on a failed forward, DEL the key so the
// provider's retry can forward again. It has no fencing: a forward slower
// than the lease can be sent twice, and its DEL can free another's claim.
// It exists only for webhookbench.
type redisReceiver struct {
	verify    *spec.Provider
	fwd       *dispatch.Forwarder
	rdb       *redis.Client
	prefix    string
	lease     time.Duration
	retention time.Duration
}

// runRedisReceiver is `webhookbench redis-receiver`.
func runRedisReceiver(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("redis-receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8091", "listen address")
	fwdFlags := addForwarderFlags(fs)
	addr := fs.String("redis", "127.0.0.1:6379", "Redis address")
	prefix := fs.String("prefix", "webhookbench:", "prefix of every Redis key")
	lease := fs.Duration("lease", 60*time.Second, "how long a claim holds (PX)")
	retention := fs.Duration("retention", time.Hour, "how long an answer is kept for replay")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	verify, err := spec.NewBuiltin("stripe", []string{benchSecret}, nil, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fwd, err := fwdFlags.forwarder()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer fwd.CloseIdleConnections()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 128})
	defer rdb.Close()
	h := &redisReceiver{verify: verify, fwd: fwd, rdb: rdb, prefix: *prefix, lease: *lease, retention: *retention}
	return serveUntilDone(ctx, *listen, h, stderr)
}

// ServeHTTP implements http.Handler.
func (h *redisReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	in := providers.Delivery{Header: r.Header, Body: body}
	if err := h.verify.Verify(r.Context(), in); err != nil {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	items, err := h.verify.Parse(in)
	if err != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	ev := items[0]
	k := dedupe.Key{Source: "stripe", Event: ev.Key}
	idem := k.ID()
	key := h.prefix + idem
	ctx := context.WithoutCancel(r.Context())
	claimed, err := h.rdb.SetNX(ctx, key, redisInFlight, h.lease).Result()
	if err != nil {
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	if !claimed {
		h.replay(ctx, w, key)
		return
	}
	res := h.fwd.Forward(ctx, dispatch.NewRequest(k, "", ev.Type, r.Header.Get("Content-Type"), body))
	if res.Outcome == dispatch.Unavailable {
		h.rdb.Del(ctx, key)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "downstream unavailable", http.StatusServiceUnavailable)
		return
	}
	h.rdb.Set(ctx, key, encodeAnswer(res.Status, res.ContentType, res.Body), h.retention)
	writeAnswer(w, res.Status, res.ContentType, res.Body, false)
}

// replay answers a duplicate: 409 while the first delivery is in flight,
// else the stored answer.
func (h *redisReceiver) replay(ctx context.Context, w http.ResponseWriter, key string) {
	v, err := h.rdb.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		// Released or expired between SET NX and GET: let the provider
		// retry.
		w.Header().Set("Retry-After", "1")
		http.Error(w, "retry", http.StatusConflict)
	case err != nil:
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
	case string(v) == redisInFlight:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "in flight", http.StatusConflict)
	default:
		status, ct, body := decodeAnswer(v)
		writeAnswer(w, status, ct, body, true)
	}
}

// encodeAnswer stores an answer as "status\ncontent-type\nbody".
func encodeAnswer(status int, ct string, body []byte) []byte {
	b := strconv.AppendInt(nil, int64(status), 10)
	b = append(b, '\n')
	b = append(b, ct...)
	b = append(b, '\n')
	return append(b, body...)
}

// decodeAnswer undoes encodeAnswer.
func decodeAnswer(v []byte) (int, string, []byte) {
	st, rest, _ := bytes.Cut(v, []byte{'\n'})
	ct, body, _ := bytes.Cut(rest, []byte{'\n'})
	status, _ := strconv.Atoi(string(st))
	return status, string(ct), body
}

func writeAnswer(w http.ResponseWriter, status int, ct string, body []byte, replayed bool) {
	if ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if status < 100 || status > 999 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// forwarderFlags are the helper receivers' flags for their forward to the
// core service, as webhookd's WEBHOOKD_DOWNSTREAM_URL and
// WEBHOOKD_DISPATCH_* set it.
type forwarderFlags struct {
	downstream *string
	timeout    *time.Duration
	retries    *int
}

func addForwarderFlags(fs *flag.FlagSet) forwarderFlags {
	return forwarderFlags{
		downstream: fs.String("downstream", "", "core service URL"),
		timeout:    fs.Duration("dispatch-timeout", 10*time.Second, "forward budget, retries included"),
		retries:    fs.Int("dispatch-retries", 2, "retries after the first attempt"),
	}
}

// forwarder is the dispatch.Forwarder the flags describe.
func (f forwarderFlags) forwarder() (*dispatch.Forwarder, error) {
	return dispatch.New(dispatch.Options{URL: *f.downstream, Timeout: *f.timeout, Retries: *f.retries})
}
