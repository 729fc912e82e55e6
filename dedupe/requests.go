package dedupe

import (
	"context"
	"time"
)

// The request log (docs/contract.md, "Refusals and the request log") is kept
// beside the records, by every backend: per node on LMDB, shared on Postgres
// (and so on the tiered store). It holds what each request to a provider
// route became, refused ones included, and never a body.

// LoggedRequest is one entry of the request log.
type LoggedRequest struct {
	// ID is the entry's place in the log, given by the store when it is
	// appended; ListRequests' After takes it. Empty on append.
	ID string `json:"id"`
	// Time is the request's arrival.
	Time time.Time `json:"time"`
	// Source is the source the route named (for an unknown route, the
	// name requested, cut to MaxRequestSourceLen bytes).
	Source string `json:"source"`
	// Provider is the source's provider, empty for an unknown route.
	Provider string `json:"provider"`
	// Outcome is the webhookd_deliveries_total outcome label.
	Outcome string `json:"outcome"`
	// Reason says why webhookd refused it, empty when it did not.
	Reason string `json:"reason"`
	// Status is the HTTP status answered.
	Status int `json:"status"`
	// Size is the bytes of body read, 0 when none was read.
	Size int64 `json:"size"`
	// RemoteAddr is the peer's address as the listener saw it.
	RemoteAddr string `json:"remote_addr"`
	// EventKey and Type are set only when the signature verified.
	EventKey string `json:"event_key,omitempty"`
	Type     string `json:"type,omitempty"`
}

// MaxRequestSourceLen bounds LoggedRequest.Source: the name of an unknown
// route comes from whoever sent the request.
const MaxRequestSourceLen = 64

// RequestLogBounds bounds the request log: at most Size entries, none older
// than Age. An append trims the log to them in the same write.
type RequestLogBounds struct {
	Size int
	Age  time.Duration
}

// RequestFilter selects entries of the request log: each non-empty field
// must equal the entry's. Limit bounds the page (DefaultRequestLimit when
// zero, at most MaxRequestLimit); After is the ID of the last entry of the
// previous page.
type RequestFilter struct {
	Source, Outcome, Reason string
	Limit                   int
	After                   string
}

// The request log's page sizes (GET /api/requests).
const (
	DefaultRequestLimit = 100
	MaxRequestLimit     = 1000
)

// PageLimit returns f's Limit bounded as documented.
func (f RequestFilter) PageLimit() int {
	switch {
	case f.Limit <= 0:
		return DefaultRequestLimit
	case f.Limit > MaxRequestLimit:
		return MaxRequestLimit
	}
	return f.Limit
}

// Match reports whether e passes f's field filters.
func (f RequestFilter) Match(e LoggedRequest) bool {
	return (f.Source == "" || f.Source == e.Source) && (f.Outcome == "" || f.Outcome == e.Outcome) &&
		(f.Reason == "" || f.Reason == e.Reason)
}

// RequestLog is what a backend keeps of the request log.
type RequestLog interface {
	// AppendRequests adds entries (oldest first) in one write, without a
	// sync of its own where the backend can avoid one, and trims the log
	// to b.
	AppendRequests(ctx context.Context, entries []LoggedRequest, b RequestLogBounds) error
	// ListRequests returns the entries f selects, newest first, and the
	// ID to pass as After for the next page ("" when nothing follows).
	ListRequests(ctx context.Context, f RequestFilter) ([]LoggedRequest, string, error)
}
