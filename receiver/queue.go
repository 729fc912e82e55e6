package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/routing"
)

// Queue is what the receiver needs of the store for a queue destination
// (docs/contract.md, "Store and forward"): the enqueue that
// takes the event off the gateway's hands (dedupe.Queue.Enqueue). The
// delivery loop (package deliver) does the rest.
type Queue interface {
	Enqueue(ctx context.Context, e dedupe.Enqueue) (*dedupe.Record, error)
}

// ErrPaused: the event's sync destination is paused; the gateway keeps the
// event and retries it (a paused queue destination queues it instead).
var ErrPaused = errors.New("destination paused, retry later")

// queued reports whether d's destination is a queue destination.
func (d *delivery) queued() bool { return d.dest != nil && d.dest.Delivery == routing.Queue }

// enqueue stores d's event, verified, for its queue destination: once the
// write is durable the event is the store's, and the gateway is
// acknowledged (answerItems). A retry of an event queued or finished
// already queues nothing and is acknowledged again (OutcomeReplayed).
func (h *handler) enqueue(d *delivery) {
	if h.Queue == nil {
		// serve always sets it; a receiver built without one cannot keep
		// the event, and the gateway keeps it instead.
		h.fail(d, fmt.Errorf("%w: no queue for destination %s", ErrStoreUnavailable, d.dest.Name), nil)
		return
	}
	// The whole body, whatever StoreRequests says: it is what will be
	// delivered.
	req := dedupe.NewRequest(d.r.Header.Get("Content-Type"), d.ev.Type, d.body, true)
	e := dedupe.Enqueue{Key: d.storedKey(), Fingerprint: d.ev.Fingerprint, Request: req, MaxAge: d.dest.MaxAge}
	step := h.step(d, "enqueue")
	var rec *dedupe.Record
	err := boundedStore{timeout: h.StoreTimeout}.call(d.storeCtx, "enqueue", func(ctx context.Context) error {
		var err error
		rec, err = h.Queue.Enqueue(ctx, e)
		return err
	})
	step.end(err)
	switch {
	case errors.Is(err, dedupe.ErrNoRequest):
		h.fail(d, fmt.Errorf("%w: a queue destination keeps the whole body, at most %d bytes", ErrTooLarge, dedupe.MaxStoredRequest), nil)
	case err != nil:
		h.fail(d, err, rec)
	case rec != nil:
		d.Outcome, d.Status = OutcomeReplayed, http.StatusOK
	default:
		d.Outcome, d.Status = OutcomeQueued, http.StatusOK
		if h.Wake != nil {
			h.Wake(d.dest.Name)
		}
	}
}
