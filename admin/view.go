package admin

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
)

// RecordView is a record as the operator's tools show it in JSON: the
// admin API (docs/contract.md, admin routes) and `webhookd keys get|list
// --json`, one shape for both, times in RFC 3339 (UTC). A listing leaves
// out the request and the response, which it does not read
// (dedupe.Store.List).
type RecordView struct {
	// Key is the event's Idempotency-Key, <source>:<event-key>: the same
	// for each destination of the event, which Destination tells apart.
	Key         string `json:"key"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Provider    string `json:"provider"`
	EventKey    string `json:"event_key"`
	Type        string `json:"type"`
	State       string `json:"state"`
	Status      int    `json:"status"`
	Attempts    uint32 `json:"attempts"`
	Stored      bool   `json:"stored"`
	Fingerprint string `json:"fingerprint"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
	ExpiresAt   string `json:"expires_at"`
	// LeaseUntil is set while a lease holds the record: an IN_FLIGHT
	// claim's, or a redrive's of a finished record.
	LeaseUntil string        `json:"lease_until,omitempty"`
	Request    *RequestView  `json:"request,omitempty"`
	Response   *ResponseView `json:"response,omitempty"`
}

// RequestView is the stored request: the body as text when it is UTF-8,
// else base64; absent when it was not kept (stored false, with its size).
type RequestView struct {
	Headers    map[string]string `json:"headers"`
	Stored     bool              `json:"stored"`
	Size       int               `json:"size"`
	Body       *string           `json:"body,omitempty"`
	BodyBase64 []byte            `json:"body_base64,omitempty"`
}

// ResponseView is the core service's stored answer, its body as
// RequestView's.
type ResponseView struct {
	Status      int     `json:"status"`
	ContentType string  `json:"content_type,omitempty"`
	Body        *string `json:"body,omitempty"`
	BodyBase64  []byte  `json:"body_base64,omitempty"`
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// bodyFields splits a body into its text or base64 field.
func bodyFields(b []byte) (*string, []byte) {
	if b == nil {
		return nil, nil
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	return nil, b
}

// forwardedHeaders are the headers a forward of rec carries, as
// dispatch.Request.SetHeaders defines them: what webhookd sent and what a
// redrive sends again.
func forwardedHeaders(rec *dedupe.Record, provider string) map[string]string {
	var typ, ct string
	if rec.Request != nil {
		typ, ct = rec.Request.EventType, rec.Request.ContentType
	}
	h := make(http.Header, 6)
	k, _ := dedupe.ParseKey(rec.Key)
	dispatch.NewRequest(k, provider, typ, ct, nil).SetHeaders(h)
	if rec.Request == nil {
		// A record without its request does not say what Content-Type
		// was sent: the view leaves it out rather than guess.
		h.Del("Content-Type")
	}
	m := make(map[string]string, len(h))
	for name := range h {
		m[name] = h.Get(name)
	}
	return m
}

// NewRecordView returns rec's view: with full, its request and response
// too (rec as Get reads it).
//
// provider names the provider of the record's source; "" when the source is
// named after its provider (every source made from the environment).
func NewRecordView(rec *dedupe.Record, provider string, full bool) RecordView {
	k, _ := dedupe.ParseKey(rec.Key)
	if provider == "" {
		provider = k.Source
	}
	v := RecordView{
		Key: k.ID(), Source: k.Source, Destination: k.DestinationName(), Provider: provider, EventKey: k.Event,
		State:  rec.State.String(),
		Status: rec.Response.Status, Attempts: rec.Attempts, Stored: rec.Request.Stored(), Fingerprint: rec.Fingerprint,
		CreatedAt: rfc3339(rec.CreatedAt), UpdatedAt: rfc3339(rec.UpdatedAt), ExpiresAt: rfc3339(rec.ExpiresAt),
	}
	if rec.Request != nil {
		v.Type = rec.Request.EventType
	}
	if rec.State == dedupe.InFlight || rec.Leased(time.Now()) {
		v.LeaseUntil = rfc3339(rec.LeaseUntil)
	}
	if !full {
		return v
	}
	v.Request = &RequestView{Headers: forwardedHeaders(rec, provider), Stored: v.Stored}
	if rec.Request != nil {
		v.Request.Size = rec.Request.Size
		if v.Stored {
			v.Request.Body, v.Request.BodyBase64 = bodyFields(rec.Request.Body)
		}
	}
	if rec.State != dedupe.InFlight || rec.Response.Status != 0 {
		v.Response = &ResponseView{Status: rec.Response.Status, ContentType: rec.Response.ContentType}
		v.Response.Body, v.Response.BodyBase64 = bodyFields(rec.Response.Body)
	}
	return v
}
