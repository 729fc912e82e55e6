package admin

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/receiver"
)

// RequestLister is what the console reads of the request log
// (dedupe.RequestLog's read side).
type RequestLister interface {
	ListRequests(ctx context.Context, f dedupe.RequestFilter) ([]dedupe.LoggedRequest, string, error)
}

// errNoRequestLog answers /api/requests on a store without one.
var errNoRequestLog = errors.New("this store keeps no request log")

// requestFilter parses GET /api/requests' query (API and console alike).
func requestFilter(r *http.Request) (dedupe.RequestFilter, error) {
	q := r.URL.Query()
	f := dedupe.RequestFilter{Source: q.Get("source"), Outcome: q.Get("outcome"), Reason: q.Get("reason"), After: q.Get("after")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > dedupe.MaxRequestLimit {
			return f, errors.New("limit must be a number from 1 to " + strconv.Itoa(dedupe.MaxRequestLimit))
		}
		f.Limit = n
	}
	return f, nil
}

// listRequests reads the page r asks for. Its errors come with their
// status: 400 for a bad filter or cursor, 404 without a request log, the
// store's otherwise (statusOf).
func (h *handler) listRequests(r *http.Request) ([]dedupe.LoggedRequest, string, dedupe.RequestFilter, int, error) {
	f, err := requestFilter(r)
	switch {
	case err != nil:
		return nil, "", f, http.StatusBadRequest, err
	case h.Requests == nil:
		return nil, "", f, http.StatusNotFound, errNoRequestLog
	}
	entries, next, err := h.Requests.ListRequests(r.Context(), f)
	if err != nil {
		return nil, "", f, statusOf(err), err
	}
	return entries, next, f, http.StatusOK, nil
}

func (h *handler) apiRequests(w http.ResponseWriter, r *http.Request) {
	entries, next, _, status, err := h.listRequests(r)
	switch {
	case status == http.StatusBadRequest, status == http.StatusNotFound:
		writeError(w, status, err.Error())
		return
	case err != nil:
		h.writeStoreError(w, r, err)
		return
	}
	if entries == nil {
		entries = []dedupe.LoggedRequest{}
	}
	writeJSON(w, http.StatusOK, struct {
		Requests []dedupe.LoggedRequest `json:"requests"`
		Next     string                 `json:"next"`
	}{entries, next})
}

// requestRow is one entry of the console's request log.
type requestRow struct {
	dedupe.LoggedRequest
	Age, Stamp string
	// Path is the record's page, for an entry whose signature verified.
	Path string
	// Refused is webhookd's own refusal; CoreRejected the core's 4xx.
	Refused, CoreRejected bool
}

type requestsPage struct {
	page
	Sources, Outcomes, Reasons []string
	Filter                     dedupe.RequestFilter
	Rows                       []requestRow
	Next                       string
}

func (h *handler) consoleRequests(w http.ResponseWriter, r *http.Request) {
	data := requestsPage{page: h.basePage(r, "Requests"), Sources: h.Providers, Reasons: receiver.Reasons()}
	for _, o := range receiver.Outcomes() {
		data.Outcomes = append(data.Outcomes, o.String())
	}
	entries, next, f, status, err := h.listRequests(r)
	data.Filter = f
	now := h.Now()
	for _, e := range entries {
		row := requestRow{LoggedRequest: e, Age: age(now, e.Time), Stamp: stamp(e.Time),
			Refused: e.Reason != "", CoreRejected: e.Outcome == receiver.OutcomeCoreRejected.String()}
		if e.EventKey != "" {
			row.Path = recordPath(e.Source + ":" + e.EventKey)
		}
		data.Rows = append(data.Rows, row)
	}
	if next != "" {
		q := r.URL.Query()
		q.Set("after", next)
		data.Next = "/requests?" + q.Encode()
	}
	switch {
	case status == http.StatusBadRequest, status == http.StatusNotFound:
		data.Error = err.Error()
	case err != nil:
		h.Logger.Warn("admin: request log failed", "error", err.Error())
		data.Error = publicError(err)
	}
	h.render(w, status, h.pages.requests, data)
}
