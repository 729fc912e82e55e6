package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
)

// floorReceiver is the least a receiver with webhookd's guarantee does for
// a delivery: a durable claim in webhookd's LMDB store, the forward with
// dispatch.Forwarder, the durable record of the answer, and for a duplicate
// the stored answer or 409. It checks no signature, parses no JSON (the
// key is the body's first "id", as the stub reads it), keeps no request,
// and logs, counts and traces nothing: the floor under webhookd's CPU per
// delivery, measured beside the proxy (BENCHMARKS.md, "The floor under the
// targets of issues 28 and 31"). It exists only for webhookbench.
type floorReceiver struct {
	store *lmdb.Store
	fwd   *dispatch.Forwarder
}

// runFloorReceiver is `webhookbench floor-receiver`.
func runFloorReceiver(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("floor-receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8092", "listen address")
	fwdFlags := addForwarderFlags(fs)
	dir := fs.String("data", "", "the LMDB store's directory")
	lease := fs.Duration("lease", 60*time.Second, "how long a claim holds")
	pprofAddr := fs.String("pprof", "", "serve Go's CPU profile and execution trace on this address, as webhookd's WEBHOOKD_PPROF_ADDR does")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "webhookbench floor-receiver: -data is required")
		return 2
	}
	if os.Getenv("GOGC") == "" {
		// webhookd serve's default (cmd/webhookd/gc.go), so that the floor
		// pays for its garbage what webhookd does.
		debug.SetGCPercent(400)
	}
	store, err := lmdb.Open(*dir, lmdb.Options{Options: dedupe.Options{Lease: *lease, PruneInterval: -1}})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer store.Close()
	fwd, err := fwdFlags.forwarder()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer fwd.CloseIdleConnections()
	stop, err := servePprof(*pprofAddr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer stop()
	return serveUntilDone(ctx, *listen, &floorReceiver{store: store, fwd: fwd}, stderr)
}

// ServeHTTP implements http.Handler.
func (h *floorReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	id := eventIDOf(body)
	if id == "" {
		http.Error(w, "no event id", http.StatusBadRequest)
		return
	}
	k := dedupe.Key{Source: "stripe", Event: id}
	ctx := context.WithoutCancel(r.Context())
	lease, rec, err := h.store.Claim(ctx, k.ID(), "", nil)
	switch {
	case errors.Is(err, dedupe.ErrInFlight):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "in flight", http.StatusConflict)
		return
	case err != nil:
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	case rec != nil:
		writeAnswer(w, rec.Response.Status, rec.Response.ContentType, rec.Response.Body, true)
		return
	}
	res := h.fwd.Forward(ctx, dispatch.NewRequest(k, "", "", r.Header.Get("Content-Type"), body))
	if res.Outcome != dispatch.Delivered {
		_ = h.store.Release(ctx, lease)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "downstream unavailable", http.StatusServiceUnavailable)
		return
	}
	// As in webhookd, the core has acted: its answer stands even if
	// recording it failed.
	_ = h.store.Complete(ctx, lease, dedupe.Response{Status: res.Status, ContentType: res.ContentType, Body: res.Body})
	writeAnswer(w, res.Status, res.ContentType, res.Body, false)
}
