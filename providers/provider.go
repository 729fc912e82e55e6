// Package providers defines what a payment provider adapter is and keeps the
// explicit registry of the adapters a receiver serves.
//
// An adapter turns a raw delivery (headers and body bytes, exactly as they
// arrived) into a verified Event. It must never re-serialise the body before
// verifying it, and it must never touch the dedupe store: the receiver only
// claims an event key after Verify has succeeded.
package providers

import (
	"context"
	"errors"
	"net/http"
)

// The receiver maps these two classes of adapter error to HTTP statuses.
// Adapters define their own, more precise sentinel errors that wrap one of
// them, so a caller can test either errors.Is(err, stripe.ErrTooOld) or
// errors.Is(err, providers.ErrUnauthorized).
var (
	// ErrUnauthorized means the delivery's signature or token is missing,
	// malformed, wrong or too old. The receiver answers 401.
	ErrUnauthorized = errors.New("delivery not authenticated")
	// ErrMalformed means the delivery is authentic but no event can be
	// derived from it (not JSON, no event key). The receiver answers 400.
	ErrMalformed = errors.New("malformed delivery")
	// ErrMismatch means a Confirmer asked the provider and the provider
	// reports something other than the delivery claims. The receiver answers
	// 401 without forwarding.
	ErrMismatch = errors.New("delivery contradicts the provider's own record")
	// ErrUnavailable means a Confirmer could not reach the provider. The
	// receiver answers 503 so that the provider retries.
	ErrUnavailable = errors.New("provider API unavailable")
)

// Event is what an adapter derives from one verified delivery.
type Event struct {
	// Key identifies the event within its provider (docs/contract.md "Event
	// keys"); every retry of one event yields the same Key.
	Key string
	// Type is the value of the Webhook-Event-Type header sent downstream.
	Type string
	// Fingerprint is a digest of the parts of the payload that the provider
	// keeps identical across its own retries of one event. Two deliveries
	// with one Key and different Fingerprints are answered 422.
	Fingerprint string
}

// Provider is an adapter for one payment provider.
type Provider interface {
	// Name is the provider's route segment and key prefix ("stripe").
	Name() string
	// Verify authenticates a delivery from its raw body and headers. Its
	// errors wrap ErrUnauthorized.
	Verify(header http.Header, body []byte) error
	// Parse derives the event from a verified body. Its errors wrap
	// ErrMalformed.
	Parse(body []byte) (Event, error)
}

// Confirmer is implemented by adapters that can ask the provider whether a
// verified delivery is true before it is forwarded (Midtrans's signature, for
// one, does not cover the transaction status). Confirm errors wrap
// ErrMismatch or ErrUnavailable.
type Confirmer interface {
	Confirm(ctx context.Context, ev Event, body []byte) error
}

// Signer is implemented by adapters that can sign a raw body the way their
// provider does, so that `webhookd replay` can send fixtures. It returns the
// body to send (Midtrans puts its signature inside the body) and the headers
// to set.
type Signer interface {
	Sign(body []byte) ([]byte, http.Header, error)
}

// HeaderParser is implemented by adapters whose event key is not in the body
// but in a signed header (Standard Webhooks' webhook-id). The receiver calls
// ParseHeader instead of Parse for them (see ParseDelivery); their Parse,
// which cannot see the header, must fail with an error wrapping
// ErrMalformed. Adapters that key on the body need not implement it.
type HeaderParser interface {
	// ParseHeader derives the event from a verified delivery's headers and
	// body. Its errors wrap ErrMalformed.
	ParseHeader(header http.Header, body []byte) (Event, error)
}

// ParseDelivery derives the event of a verified delivery: p's ParseHeader
// when p is a HeaderParser, else p's Parse of the body. The receiver and
// the conformance kit call it, so that an adapter keyed by a header is
// parsed with the headers it was verified with.
func ParseDelivery(p Provider, header http.Header, body []byte) (Event, error) {
	if hp, ok := p.(HeaderParser); ok {
		return hp.ParseHeader(header, body)
	}
	return p.Parse(body)
}

// ContextVerifier is implemented by adapters whose verification needs the
// network (PayPal's signing certificate is fetched from the URL a delivery
// names). The receiver calls VerifyContext instead of Verify for them (see
// VerifyDelivery), with a context that ends when the request does. Its
// errors wrap ErrUnauthorized, or ErrUnavailable when the network call
// failed: a genuine delivery must then be answered 503, so that the
// provider retries, never 401.
type ContextVerifier interface {
	VerifyContext(ctx context.Context, header http.Header, body []byte) error
}

// VerifyDelivery authenticates a delivery: p's VerifyContext when p is a
// ContextVerifier, else p's Verify. The receiver and the conformance kit
// call it, so that an adapter that needs the network is given the
// request's context.
func VerifyDelivery(ctx context.Context, p Provider, header http.Header, body []byte) error {
	if cv, ok := p.(ContextVerifier); ok {
		return cv.VerifyContext(ctx, header, body)
	}
	return p.Verify(header, body)
}

// Item is one event of a request that carries several (see Batcher).
type Item struct {
	// Event is the item's own event: its key, type and fingerprint.
	Event Event
	// Body is what the core service receives for this item, in place of
	// the request's body (Adyen: a notification holding this one item,
	// its bytes unchanged).
	Body []byte
}

// Batcher is implemented by adapters whose one request may carry several
// events, each signed on its own (Adyen's notificationItems). The receiver
// verifies the whole request first (Verify must check every item, so that
// one forged item fails the request before anything is stored), then
// claims, forwards and records each item under its own key, in the order
// Split returns them, and answers the provider from the items' outcomes
// (docs/contract.md, "Batches (Adyen)"). Its Parse, which cannot return
// several events, must fail with an error wrapping ErrMalformed for a
// request of more than one item. Single-event adapters need not implement
// it.
type Batcher interface {
	// Split derives the events of a verified delivery, in the request's
	// order, each with the body to forward. Its errors wrap ErrMalformed.
	Split(header http.Header, body []byte) ([]Item, error)
}

// SplitDelivery derives the events of a verified delivery: p's Split when p
// is a Batcher, else the one event of ParseDelivery, forwarded with the
// request's own body. The receiver and the conformance kit call it.
func SplitDelivery(p Provider, header http.Header, body []byte) ([]Item, error) {
	if b, ok := p.(Batcher); ok {
		return b.Split(header, body)
	}
	ev, err := ParseDelivery(p, header, body)
	if err != nil {
		return nil, err
	}
	return []Item{{Event: ev, Body: body}}, nil
}

// Acknowledgement is the answer a provider expects once it need not send a
// request again.
type Acknowledgement struct {
	Status      int
	ContentType string
	Body        []byte
}

// Acknowledger is implemented by adapters whose provider expects a set
// answer rather than the core service's own (Adyen: 200 with the text body
// "[accepted]"). The receiver answers it once every event of the request
// is COMPLETED or FAILED, forwarded now or replayed; until then it answers
// as for a batch (see Batcher). A Batcher that is not an Acknowledger is
// answered 200 with no body.
type Acknowledger interface {
	Acknowledgement() Acknowledgement
}
