package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/redrive"
)

// listOptions parses the listing's query (API and console alike).
func listOptions(r *http.Request) (dedupe.RecentOptions, error) {
	q := r.URL.Query()
	o := dedupe.RecentOptions{Provider: q.Get("provider"), Cursor: q.Get("after"), Destination: q.Get("destination")}
	if strings.Contains(o.Provider, ":") {
		return o, errors.New("provider takes a provider name (stripe), not a key")
	}
	if src := q.Get("source"); src != "" {
		// A source is the keys' prefix, as a provider is for the sources
		// the environment names after their providers.
		if o.Provider != "" && o.Provider != src {
			return o, errors.New("give source or provider, not both")
		}
		if !dedupe.ValidName(src) {
			return o, errors.New("source takes a source name (stripe-eu), not a key")
		}
		o.Provider = src
	}
	if o.Destination != "" && !dedupe.ValidName(o.Destination) {
		return o, errors.New("destination takes a destination name (billing)")
	}
	if s := q.Get("state"); s != "" {
		st, err := dedupe.ParseState(strings.ToUpper(s))
		if err != nil {
			return o, errors.New("state must be IN_FLIGHT, COMPLETED, FAILED or QUEUED")
		}
		o.State = st
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > dedupe.MaxRecentLimit {
			return o, errors.New("limit must be a number from 1 to " + strconv.Itoa(dedupe.MaxRecentLimit))
		}
		o.Limit = n
	}
	return o, nil
}

func (h *handler) apiList(w http.ResponseWriter, r *http.Request) {
	o, err := listOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	recs, next, err := h.Store.Recent(r.Context(), o)
	if err != nil {
		h.writeStoreError(w, r, err)
		return
	}
	out := struct {
		Records []RecordView `json:"records"`
		Next    string       `json:"next"`
	}{Records: make([]RecordView, 0, len(recs)), Next: next}
	for i := range recs {
		out.Records = append(out.Records, h.view(&recs[i], false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) apiGet(w http.ResponseWriter, r *http.Request) {
	key, err := h.recordKey(r)
	if err != nil {
		h.writeStoreError(w, r, err)
		return
	}
	rec, err := h.Store.Get(r.Context(), key)
	if err != nil {
		h.writeStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.view(&rec, true))
}

func (h *handler) apiDelete(w http.ResponseWriter, r *http.Request) {
	key, err := h.recordKey(r)
	if err == nil {
		err = h.Store.Delete(r.Context(), key)
	}
	if err != nil {
		h.writeStoreError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// apiRedrive answers 200 with the record after the redrive (COMPLETED, or
// FAILED with the core service's new rejection); 503 with the unchanged
// record when the core service did not answer.
func (h *handler) apiRedrive(w http.ResponseWriter, r *http.Request) {
	res, err := h.redrive(r)
	switch {
	case errors.Is(err, redrive.ErrNotDelivered):
		w.Header().Set("Retry-After", "30")
		writeJSON(w, http.StatusServiceUnavailable, struct {
			Error  string     `json:"error"`
			Record RecordView `json:"record"`
		}{err.Error(), h.view(&res.Record, true)})
	case err != nil:
		h.writeStoreError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, h.view(&res.Record, true))
	}
}

// redrive runs a redrive for r's key. Its forward outlives the request:
// a client that hangs up must not cut a forward under way short.
func (h *handler) redrive(r *http.Request) (redrive.Result, error) {
	key, err := h.recordKey(r)
	if err != nil {
		return redrive.Result{}, err
	}
	ctx := context.WithoutCancel(r.Context())
	if rec, gerr := h.Store.Get(ctx, key); gerr == nil && rec.Destination != "" && h.Queue != nil {
		// A queue destination's record goes back to its queue: the
		// delivery loop, not this request, forwards it.
		var maxAge time.Duration
		if d, ok := h.destination(rec.Destination); ok {
			maxAge = d.MaxAge
		}
		rec, err := h.Queue.Requeue(ctx, key, maxAge)
		h.Logger.Info("redrive: requeued", "key", key, "error", errString(err))
		if errors.Is(err, dedupe.ErrNotQueueable) {
			err = fmt.Errorf("%w: %v", dedupe.ErrInFlight, err) // queued or delivering already: 409
		}
		return redrive.Result{Record: rec}, err
	}
	res, err := h.Redriver.Redrive(ctx, key)
	h.Logger.Info("redrive", "key", key, "status", res.Dispatch.Status, "delivered", res.Delivered(), "error", errString(err))
	return res, err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// statusOf maps the store's and the redrive's errors to the admin routes'
// statuses (docs/contract.md, admin routes), in one place.
func statusOf(err error) int {
	switch {
	case errors.Is(err, dedupe.ErrNotFound), errors.Is(err, errNoDestination):
		return http.StatusNotFound
	case errors.Is(err, dedupe.ErrInFlight):
		return http.StatusConflict
	case errors.Is(err, dedupe.ErrNoRequest), errors.Is(err, redrive.ErrNoDestination):
		return http.StatusUnprocessableEntity
	case errors.Is(err, dedupe.ErrInvalidKey), errors.Is(err, dedupe.ErrInvalidCursor), errors.Is(err, dedupe.ErrAmbiguous):
		return http.StatusBadRequest
	case errors.Is(err, redrive.ErrNotDelivered), errors.Is(err, dedupe.ErrUnavailable), errors.Is(err, dedupe.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// publicError is what an answer says of err: the sentinel's own words for
// the outcomes an operator acts on; storage failures are logged, not shown.
func publicError(err error) string {
	switch statusOf(err) {
	case http.StatusNotFound:
		if errors.Is(err, errNoDestination) {
			return err.Error()
		}
		return "no record for this key (never delivered, released after a failed forward, deleted or pruned)"
	case http.StatusServiceUnavailable:
		if errors.Is(err, redrive.ErrNotDelivered) {
			return redrive.ErrNotDelivered.Error()
		}
		return dedupe.ErrUnavailable.Error()
	case http.StatusInternalServerError:
		return "internal error"
	}
	return err.Error()
}

func (h *handler) writeStoreError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status >= 500 {
		h.Logger.Warn("admin request failed", "path", r.URL.Path, "error", err.Error())
	}
	writeError(w, status, publicError(err))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// recordKey is the stored key of the record a request names: the {key}
// path segment (the Idempotency-Key, <source>:<event-key>) and
// ?destination= (dedupe.ResolveKey).
func (h *handler) recordKey(r *http.Request) (string, error) {
	return dedupe.ResolveKey(r.Context(), h.Store, keyParam(r), r.URL.Query().Get("destination"))
}
