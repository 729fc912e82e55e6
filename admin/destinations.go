package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/redrive"
)

// Destination is one destination of the configuration in force, as the
// destinations routes show it.
type Destination struct {
	Name     string
	URL      string // redacted (dispatch.RedactURL)
	Delivery string // "sync" or "queue"
	MaxAge   time.Duration
	// Sources are the sources whose routes reach it: the overview shows
	// a queue destination's depth and oldest on their rows.
	Sources []string
}

// Queue is what the destinations routes need of the store: the queues'
// figures, the pause flags and the requeue of a redrive
// (dedupe.Queue).
type Queue interface {
	QueueStats(ctx context.Context, destination string) (dedupe.QueueStats, error)
	SetPaused(ctx context.Context, destination string, paused bool) error
	Paused(ctx context.Context) (map[string]dedupe.Pause, error)
	Requeue(ctx context.Context, key string, maxAge time.Duration) (dedupe.Record, error)
	QueueDestinations(ctx context.Context) ([]string, error)
}

// DestinationView is a destination in GET /api/destinations.
type DestinationView struct {
	Name           string     `json:"name"`
	URL            string     `json:"url"`
	Delivery       string     `json:"delivery"`
	Paused         bool       `json:"paused"`
	PausedSince    *time.Time `json:"paused_since"`
	Queued         int        `json:"queued"`
	OldestQueuedAt *time.Time `json:"oldest_queued_at"`
	// Removed marks the queue of a destination that is not in the
	// configuration in force (a reload removed it) while events wait in
	// it: they stay, undelivered, until a destination of that name
	// returns (docs/delivery.md).
	Removed bool `json:"removed,omitempty"`
}

// destinations reads every destination's view.
func (h *handler) destinations(ctx context.Context) ([]DestinationView, error) {
	if h.Queue == nil || h.Destinations == nil {
		return nil, nil
	}
	paused, err := h.Queue.Paused(ctx)
	if err != nil {
		return nil, err
	}
	var out []DestinationView
	configured := map[string]bool{}
	for _, d := range h.Destinations() {
		configured[d.Name] = true
		v, err := h.destinationView(ctx, d, paused)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	queues, err := h.Queue.QueueDestinations(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range queues {
		if configured[name] {
			continue
		}
		v, err := h.destinationView(ctx, Destination{Name: name, Delivery: "queue"}, paused)
		if err != nil {
			return nil, err
		}
		v.Removed = true
		out = append(out, v)
	}
	return out, nil
}

func (h *handler) destinationView(ctx context.Context, d Destination, paused map[string]dedupe.Pause) (DestinationView, error) {
	v := DestinationView{Name: d.Name, URL: d.URL, Delivery: d.Delivery}
	if p := paused[d.Name]; p.Paused {
		since := p.Since
		v.Paused, v.PausedSince = true, &since
	}
	if d.Delivery != "queue" {
		return v, nil
	}
	st, err := h.Queue.QueueStats(ctx, d.Name)
	if err != nil {
		return v, err
	}
	v.Queued = st.Depth
	if !st.Oldest.IsZero() {
		oldest := st.Oldest
		v.OldestQueuedAt = &oldest
	}
	return v, nil
}

// destination is the destination named name in the configuration in force.
func (h *handler) destination(name string) (Destination, bool) {
	if h.Destinations == nil {
		return Destination{}, false
	}
	for _, d := range h.Destinations() {
		if d.Name == name {
			return d, true
		}
	}
	return Destination{}, false
}

func (h *handler) apiDestinations(w http.ResponseWriter, r *http.Request) {
	views, err := h.destinations(r.Context())
	if err != nil {
		h.writeStoreError(w, r, err)
		return
	}
	if views == nil {
		views = []DestinationView{}
	}
	writeJSON(w, http.StatusOK, struct {
		Destinations []DestinationView `json:"destinations"`
	}{views})
}

// apiPause answers POST /api/destinations/{name}/pause and /resume.
func (h *handler) apiPause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h.setPaused(r.Context(), chi.URLParam(r, "name"), paused)
		if err != nil {
			h.writeStoreError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func (h *handler) setPaused(ctx context.Context, name string, paused bool) (DestinationView, error) {
	d, ok := h.destination(name)
	if !ok || h.Queue == nil {
		return DestinationView{}, fmt.Errorf("%w: no destination %q", errNoDestination, name)
	}
	if err := h.Queue.SetPaused(ctx, name, paused); err != nil {
		return DestinationView{}, err
	}
	h.Logger.Info("destination paused", "destination", name, "paused", paused)
	flags, err := h.Queue.Paused(ctx)
	if err != nil {
		return DestinationView{}, err
	}
	return h.destinationView(ctx, d, flags)
}

// errNoDestination: the route names no destination of the configuration in
// force (404).
var errNoDestination = errors.New("no such destination")

// RedriveFilter is the body of POST /api/redrive.
type RedriveFilter struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	State       string `json:"state"`
	Type        string `json:"type"`
	Since       string `json:"since"`
	Until       string `json:"until"`
}

// redriveMatch is a parsed RedriveFilter.
type redriveMatch struct {
	opts         dedupe.RecentOptions
	typ          string
	since, until time.Time
}

// parseFilter checks f; since and until are RFC 3339 times or durations
// back from now.
func parseFilter(f RedriveFilter, now time.Time) (redriveMatch, error) {
	m := redriveMatch{opts: dedupe.RecentOptions{Provider: f.Source, Destination: f.Destination, State: dedupe.Failed,
		Limit: dedupe.MaxRecentLimit}, typ: f.Type}
	if f.State != "" {
		st, err := dedupe.ParseState(strings.ToUpper(f.State))
		if err != nil {
			return m, fmt.Errorf("%w: %v", errBadFilter, err)
		}
		m.opts.State = st
	}
	if f.Type != "" {
		if _, err := path.Match(f.Type, ""); err != nil {
			return m, fmt.Errorf("%w: type %q: %v", errBadFilter, f.Type, err)
		}
	}
	var err error
	if m.since, err = parseWhen(f.Since, now); err != nil {
		return m, fmt.Errorf("%w: since: %v", errBadFilter, err)
	}
	if m.until, err = parseWhen(f.Until, now); err != nil {
		return m, fmt.Errorf("%w: until: %v", errBadFilter, err)
	}
	return m, nil
}

// errBadFilter: a redrive filter that does not parse (400).
var errBadFilter = errors.New("bad redrive filter")

func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Parse(time.RFC3339, s)
}

func (m *redriveMatch) matches(rec *dedupe.Record) bool {
	switch {
	case !m.since.IsZero() && rec.CreatedAt.Before(m.since):
		return false
	case !m.until.IsZero() && rec.CreatedAt.After(m.until):
		return false
	case m.typ != "":
		typ := ""
		if rec.Request != nil {
			typ = rec.Request.EventType
		}
		ok, _ := path.Match(m.typ, typ)
		return ok
	}
	return true
}

// RedriveSummary is the answer of POST /api/redrive.
type RedriveSummary struct {
	Matched  int `json:"matched"`
	Redriven int `json:"redriven"`
}

// apiRedriveFilter answers POST /api/redrive: every matching record of a
// queue destination is requeued, of a sync one forwarded again (as a
// record's redrive is); matched counts the records the filter selects,
// redriven those taken (not those an attempt or a lease holds).
func (h *handler) apiRedriveFilter(w http.ResponseWriter, r *http.Request) {
	var f RedriveFilter
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%v: %v", errBadFilter, err))
		return
	}
	m, err := parseFilter(f, h.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	sum, err := h.redriveFilter(context.WithoutCancel(r.Context()), m)
	if err != nil {
		h.writeStoreError(w, r, err)
		return
	}
	h.Logger.Info("redrive by filter", "filter", fmt.Sprintf("%+v", f), "matched", sum.Matched, "redriven", sum.Redriven)
	writeJSON(w, http.StatusOK, sum)
}

// redriveFilter walks the records newest first, page by page, and redrives
// every match.
func (h *handler) redriveFilter(ctx context.Context, m redriveMatch) (RedriveSummary, error) {
	var sum RedriveSummary
	for {
		recs, next, err := h.Store.Recent(ctx, m.opts)
		if err != nil {
			return sum, err
		}
		for i := range recs {
			rec := &recs[i]
			if !m.matches(rec) {
				continue
			}
			sum.Matched++
			if h.redriveOne(ctx, rec) {
				sum.Redriven++
			}
		}
		if next == "" {
			return sum, nil
		}
		m.opts.Cursor = next
	}
}

// redriveOne requeues rec (a queue destination's) or forwards it again.
func (h *handler) redriveOne(ctx context.Context, rec *dedupe.Record) bool {
	if rec.Destination != "" && h.Queue != nil {
		maxAge := time.Duration(0)
		if d, ok := h.destination(rec.Destination); ok {
			maxAge = d.MaxAge
		}
		_, err := h.Queue.Requeue(ctx, rec.Key, maxAge)
		if err != nil {
			h.Logger.Info("redrive: not requeued", "key", rec.Key, "error", err.Error())
		}
		return err == nil
	}
	res, err := h.Redriver.Redrive(ctx, rec.Key)
	h.Logger.Info("redrive", "key", rec.Key, "status", res.Dispatch.Status, "delivered", res.Delivered(), "error", errString(err))
	// Taken but not answered (the core down) is redriven all the same.
	return err == nil || errors.Is(err, redrive.ErrNotDelivered)
}
