package dispatch

import (
	"net/http"

	"github.com/webhookd/webhookd/dedupe"
)

// NewRequest is the Request that forwards an event claimed under key to
// its destination, from a source of provider ("" when the source is named
// after its provider, as one made from the environment is). The source,
// the event key and the Idempotency-Key are read from key, so every caller
// (the receiver, a redrive, the benchmark's receivers) sends the same
// headers for the same key, to every destination of the event, and none
// can send an event that disagrees with the key the core service dedupes
// on.
func NewRequest(key dedupe.Key, provider, eventType, contentType string, body []byte) Request {
	if provider == "" {
		provider = key.Source
	}
	return Request{
		Source:         key.Source,
		Provider:       provider,
		IdempotencyKey: key.ID(),
		EventKey:       key.Event,
		EventType:      eventType,
		ContentType:    contentType,
		Body:           body,
	}
}

// SetHeaders sets on h the headers a forward of r carries besides its
// signature (made afresh by each attempt, see Options.SigningSecrets) and
// its trace context: User-Agent and the list in docs/contract.md ("What the
// core service receives"). It is the one definition of them: the Forwarder sends them,
// and the admin console shows them as what the core received and what a
// redrive sends again.
//
// h must hold none of them yet. The names are written in canonical form,
// so they go into the map as they are (what h.Set would do after
// canonicalising them), and every value slice is cut from one array: one
// allocation for all of them instead of one per header on every forward.
func (r Request) SetHeaders(h http.Header) {
	ct := r.ContentType
	if ct == "" {
		ct = defaultContentType
	}
	vals := [...]string{ct, userAgent, r.IdempotencyKey, r.Source, r.Provider, r.EventKey, r.EventType}
	names := [...]string{"Content-Type", "User-Agent", "Idempotency-Key", "Webhook-Source", "Webhook-Provider", "Webhook-Event-Id", "Webhook-Event-Type"}
	backing := vals[:]
	for i, name := range names {
		// Empty values are left out rather than sent blank: a blank
		// Idempotency-Key is worse than none to a core service that
		// dedupes.
		if backing[i] != "" {
			h[name] = backing[i : i+1 : i+1]
		}
	}
}
