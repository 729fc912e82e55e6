// Package providers defines what a payment provider adapter is and keeps the
// explicit registry of the adapters a receiver serves.
//
// An adapter turns a raw delivery (headers, query and body bytes, exactly
// as they arrived) into verified events. It must never re-serialise the
// body before verifying it, and it must never touch the dedupe store: the
// receiver only claims an event key after Verify has succeeded.
package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// The receiver maps these classes of adapter error to HTTP statuses.
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
	// ErrUnavailable means a network call that Verify or Confirm needs
	// failed (a certificate fetch, a status API). The receiver answers 503,
	// never 401, so that the provider retries a genuine delivery.
	ErrUnavailable = errors.New("provider API unavailable")
	// ErrCannotSign means an adapter cannot sign as its provider does: it
	// is no Signer (PayPal's, whose provider signs with a certificate's key
	// webhookd never holds), or its Sign cannot (a public-key spec). Its
	// fixtures are replayed with their captured headers.
	ErrCannotSign = errors.New("provider's signature cannot be made here")
)

// Delivery is one request to a provider route, exactly as it arrived. The
// receiver passes it by value: the header and query maps and the body are
// the request's own, read by adapters and never modified.
type Delivery struct {
	// Header is the request's headers.
	Header http.Header
	// Query is the request URL's query; nil when it has none. Some
	// gateways sign a query value.
	Query url.Values
	// Body is the raw body, never re-serialised.
	Body []byte
	// Path is the service path the request carries after its route
	// ("/v1.0/transfer-va/payment" of /webhooks/snap/v1.0/transfer-va/payment),
	// empty for most: only a ServicePather is sent one.
	Path string
}

// ServicePather is implemented by a provider whose sender appends a
// service path to the URL it was given (Bank Indonesia SNAP). The
// receiver routes POST /webhooks/<name>/<service path> to it when
// ServicePaths reports true, and answers 404 for any other provider.
type ServicePather interface {
	ServicePaths() bool
}

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

// Item is one event of a delivery and what the core service receives for
// it.
type Item struct {
	Event
	// Body is forwarded to the core service for this event: the
	// delivery's body for a provider whose request carries one event,
	// the item's own notification for a batch (Adyen: a notification
	// holding this one item, its bytes unchanged).
	Body []byte
}

// Acknowledgement is the answer a batch provider expects once it need not
// send a request again.
type Acknowledgement struct {
	Status      int
	ContentType string
	Body        []byte
}

// Provider is an adapter for one payment provider: what every adapter has,
// and all the receiver needs of most. What only some can do is an optional
// interface of its own (Signer, Acknowledger, Confirmer, ServicePather),
// which a consumer asks for by type assertion.
type Provider interface {
	// Name is the provider's route segment and key prefix ("stripe").
	Name() string
	// Verify authenticates the delivery. It must check every event a
	// batch carries, so that one forged item fails the request before
	// anything is stored. Its errors wrap ErrUnauthorized, or
	// ErrUnavailable when a network call it needs failed (503, never
	// 401). ctx ends when the request does.
	Verify(ctx context.Context, d Delivery) error
	// Parse derives a verified delivery's events, in the request's order:
	// one for most providers, whose Item.Body is d.Body. Its errors wrap
	// ErrMalformed.
	Parse(d Delivery) ([]Item, error)
}

// Signer is implemented by an adapter that can sign a body as its provider
// would, for `webhookd replay` and the conformance kit: one whose provider
// signs with a secret webhookd holds. PayPal's adapter is none (PayPal
// signs with its certificate's private key).
type Signer interface {
	// Sign returns the delivery to send with body, signed: its body may
	// differ from body (Midtrans signs inside the body). An adapter that
	// cannot sign this provider's deliveries after all (a spec whose
	// sender signs with a private key) returns an error wrapping
	// ErrCannotSign.
	Sign(body []byte) (Delivery, error)
}

// Sign signs body with p if p is a Signer. For any other adapter it
// returns an error wrapping ErrCannotSign that names the provider, so that
// a caller tells "cannot sign" from a failure with one errors.Is.
func Sign(p Provider, body []byte) (Delivery, error) {
	s, ok := p.(Signer)
	if !ok {
		return Delivery{}, fmt.Errorf("provider %s cannot sign: %w", p.Name(), ErrCannotSign)
	}
	return s.Sign(body)
}

// Acknowledger is implemented by an adapter whose provider expects a set
// answer rather than the core service's (Adyen's batches, SNAP's JSON).
// The receiver asks for it once per provider, when it builds its routes.
type Acknowledger interface {
	// Ack is the answer the provider expects once every item of a request
	// is COMPLETED or FAILED (Adyen: 200 "[accepted]"); until then the
	// receiver answers for the most urgent unfinished item (docs/contract.md,
	// "Batches (Adyen)"). Nil means none after all (a spec without a batch
	// or an ack): the core service's answer is relayed, and a request must
	// carry one event.
	Ack() *Acknowledgement
}

// AckOf returns p's acknowledgement: its Ack if p is an Acknowledger, else
// nil (the core service's answer is relayed).
func AckOf(p Provider) *Acknowledgement {
	if a, ok := p.(Acknowledger); ok {
		return a.Ack()
	}
	return nil
}

// Confirmer is implemented by adapters that ask the provider's API whether
// a verified event is true before it is forwarded (Midtrans's signature,
// for one, does not cover the transaction status). The receiver calls
// Confirm for each item after claiming its key. Its errors wrap
// ErrMismatch or ErrUnavailable.
type Confirmer interface {
	Confirm(ctx context.Context, it Item) error
}

// One returns the single item of a delivery that carries one event: the
// event that event derives from its body, forwarded with that body.
// Adapters of single-event providers implement Parse with it.
func One(d Delivery, event func(body []byte) (Event, error)) ([]Item, error) {
	ev, err := event(d.Body)
	if err != nil {
		return nil, err
	}
	return []Item{{Event: ev, Body: d.Body}}, nil
}
