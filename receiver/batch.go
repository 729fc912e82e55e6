package receiver

import (
	"bytes"
	"context"
	"net/http"
	"sync"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
)

// A request of a batch provider (a providers.Acknowledger: Adyen's
// notificationItems) runs each item through the very steps of a
// single-event request (deliver: capture, claim, confirm, forward, record),
// in the request's order, with the item's own key and forwarded body, and
// is answered from the items' outcomes (docs/contract.md, "Batches
// (Adyen)"):
//
//   - Verify has already checked the whole request, every item, before
//     any item is claimed: one forged item stores nothing.
//   - Every item is processed, whatever the items before it got: an item
//     IN_FLIGHT on another request (409), with another payload (422) or
//     whose forward failed (503) does not keep the items after it from
//     being forwarded and recorded, so that the provider's retry of the
//     request finds them finished and forwards only what is not, as far
//     as the request's time budget reaches (below).
//   - The provider is answered its acknowledgement (its Ack) once
//     every item is COMPLETED or FAILED, forwarded now or replayed; else
//     the answer of the most urgent item that is not, in this order: 503,
//     409, 422, then any other (a core service's 4xx under
//     WEBHOOKD_FAILED_POLICY=retry, which released the key), the first in
//     the request's order among equals.
//   - The request has one time budget, Config.BatchTimeout (serve sets the
//     dispatch timeout, what one single-event request may take): when it
//     runs out, the forward in flight is cut and its key released, and the
//     items not reached are answered 503 without being claimed, so that
//     the provider, which gives up on a slow answer anyway, retries the
//     request and finds the finished items replayed.
//
// The same rules answer an event that its routes send to several
// destinations (WEBHOOKD_CONFIG, docs/routing.md): each (item, destination)
// is a record of its own, delivered as an item is, and the gateway's retry
// reaches only the destinations that do not have the event yet. A
// provider without an acknowledgement of its own is answered defaultAck
// then. An item no route wants is settled as it is (OutcomeUnrouted),
// forwarded nowhere.
//
// Each item (each item and destination) gets its own delivery line and
// OnDelivery call; the request gets one more, with OutcomeBatch and Items
// set.

// receiveItems delivers a verified request's items, each to every
// destination its routes name (a record per item and destination), and
// answers it with ack once every one is settled. An item no route wants
// is acknowledged as settled, forwarded nowhere (OutcomeUnrouted).
func (h *handler) receiveItems(d *delivery, items []providers.Item, ack *providers.Acknowledgement) {
	p := d.provider
	var budget context.Context
	if h.BatchTimeout > 0 {
		var cancel context.CancelFunc
		budget, cancel = context.WithTimeout(context.WithoutCancel(d.r.Context()), h.BatchTimeout)
		defer cancel()
	}
	done := make([]*delivery, 0, len(items))
	for _, it := range items {
		item := h.item(d, p, it, budget)
		dests := h.route(nil, item)
		if len(dests) == 0 {
			item.Outcome, item.Status = OutcomeUnrouted, http.StatusOK
			if len(items) == 1 && d.routes.ack(d.Source) == nil {
				// The request's one event: its own line says unrouted.
				h.unrouted(d, item, ack)
				return
			}
			h.report(item)
			done = append(done, item)
			continue
		}
		if h.Capture != nil {
			h.Capture(item.Source, it.Key, it.Body)
		}
		records := make([]*delivery, len(dests))
		for i, dest := range dests {
			if i > 0 {
				item = h.item(d, p, it, budget)
			}
			item.captured = true
			item.setKey(dest)
			records[i] = item
		}
		h.deliverAll(records)
		done = append(done, records...)
	}
	d.Items = len(done)
	h.answerItems(d, done, ack)
}

// deliverAll delivers one item's records, one per destination, at once:
// the gateway waits for the slowest destination, not for their sum. A
// panic in one is raised again on the request's goroutine once all are
// done, where the recoverer answers it, as it would a single delivery's.
func (h *handler) deliverAll(records []*delivery) {
	if len(records) == 1 {
		h.deliverItem(records[0])
		return
	}
	var wg sync.WaitGroup
	panics := make([]any, len(records))
	for i, rec := range records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			h.deliverItem(rec)
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

// item is the delivery of one item of d to one destination (setKey names
// it), answered into an itemWriter for answerItems to choose from.
func (h *handler) item(d *delivery, p providers.Provider, it providers.Item, budget context.Context) *delivery {
	item := &delivery{start: h.Now(), w: &itemWriter{header: http.Header{}}, r: d.r, routes: d.routes, src: d.src,
		provider: p, body: it.Body, ev: it.Event, budget: budget}
	item.Provider, item.Source, item.Received, item.RemoteAddr, item.Size = d.Provider, d.Source, d.Received, d.RemoteAddr, d.Size
	item.Key, item.Type = dedupe.Key{Source: d.Source, Event: it.Key}.ID(), it.Type
	return item
}

// unrouted answers a request whose one event no route wants: acknowledged
// as a delivered one would be, forwarded nowhere.
func (h *handler) unrouted(d, item *delivery, ack *providers.Acknowledgement) {
	d.Key, d.Type = item.Key, item.Type
	d.Outcome, d.Status = OutcomeUnrouted, ack.Status
	writeAck(d.w, ack, false)
}

// deliverItem delivers one item and reports it: an item the request's
// budget does not reach is answered ErrBatchTimeout, unclaimed.
func (h *handler) deliverItem(item *delivery) {
	defer h.report(item)
	if item.budget != nil && item.budget.Err() != nil {
		h.fail(item, ErrBatchTimeout, nil)
		return
	}
	h.deliver(item)
}

// outOfTime names the request's budget as the reason an item's outbound
// call could not complete, when it is.
func (h *handler) outOfTime(d *delivery, err error) error {
	if status, _ := classify(err); status == http.StatusServiceUnavailable && d.budget != nil && d.budget.Err() != nil {
		return ErrBatchTimeout
	}
	return err
}

// finished reports whether an item's event is COMPLETED or FAILED: the
// provider need not send it again.
func (h *handler) finished(item *delivery) bool {
	switch item.Outcome {
	case OutcomeForwarded, OutcomeReplayed, OutcomeUnrouted, OutcomeQueued:
		return true
	case OutcomeCoreRejected:
		// Recorded as FAILED, unless the policy released the key.
		return item.policy() == PolicyReplay
	}
	return false
}

// urgency orders the answers of unfinished items: the lowest is answered.
func urgency(status int) int {
	switch status {
	case http.StatusServiceUnavailable:
		return 0
	case http.StatusConflict:
		return 1
	case http.StatusUnprocessableEntity:
		return 2
	}
	return 3
}

// answerItems answers the request from its items' outcomes: ack when
// every one is settled.
func (h *handler) answerItems(d *delivery, items []*delivery, ack *providers.Acknowledgement) {
	d.Outcome = OutcomeBatch
	var pick *delivery
	replayed := true
	for _, item := range items {
		replayed = replayed && item.Outcome == OutcomeReplayed
		if h.finished(item) {
			continue
		}
		if pick == nil || urgency(item.Status) < urgency(pick.Status) {
			pick = item
		}
	}
	w := d.w
	if pick == nil {
		d.Status = ack.Status
		writeAck(w, ack, replayed)
		return
	}
	iw := pick.w.(*itemWriter)
	for name, values := range iw.header {
		w.Header()[name] = values
	}
	d.Status, d.RejectedBy = iw.status, pick.RejectedBy
	w.WriteHeader(iw.status)
	_, _ = w.Write(iw.body.Bytes())
}

// writeAck answers ack.
func writeAck(w http.ResponseWriter, ack *providers.Acknowledgement, replayed bool) {
	if ack.ContentType != "" {
		w.Header().Set("Content-Type", ack.ContentType)
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(ack.Status)
	_, _ = w.Write(ack.Body)
}

// itemWriter keeps the answer an item would have been given as a request
// of its own, for answerItems to choose from.
type itemWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *itemWriter) Header() http.Header { return w.header }

func (w *itemWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *itemWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
