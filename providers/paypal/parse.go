package paypal

import (
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names (compared case-insensitively, with Unicode folding, in every
	// object at any depth).
	ErrNotJSON = fmt.Errorf("%w: paypal: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means id is missing, not a string, or not a token.
	ErrNoEventKey = fmt.Errorf("%w: paypal: no usable event id", providers.ErrNoEventKey)
	// ErrInvalidEventType means event_type is missing, not a string, or
	// not a token.
	ErrInvalidEventType = fmt.Errorf("%w: paypal: event_type is invalid", providers.ErrNoEventKey)
)

// MaxFieldBytes is the longest id or event_type accepted (PayPal's ids are
// about 40 bytes).
const MaxFieldBytes = 255

// fingerprintFields are the event's members that PayPal sends unchanged on
// every retry and resend of one event, fingerprinted canonically (member
// order and white space do not count): the event's identity and the
// resource snapshot it carries. links (PayPal's own URLs for the event)
// and any member PayPal adds later are left out, so that a retry carrying
// one is not answered 422.
//
// Changing this list changes every stored fingerprint: retries of events in
// flight across the deploy would get 422.
var fingerprintFields = []string{"id", "event_version", "create_time", "resource_type", "resource_version", "event_type", "summary", "resource"}

// event derives the event from a verified body (docs/contract.md, "Event
// keys"): Key is the event's id (WH-...), Type its event_type. Its errors
// wrap providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	id, ok, err := o.String("id")
	if err != nil || !ok || !providers.IsToken(id, MaxFieldBytes) {
		return providers.Event{}, ErrNoEventKey
	}
	typ, ok, err := o.String("event_type")
	if err != nil || !ok || !providers.IsToken(typ, MaxFieldBytes) {
		return providers.Event{}, ErrInvalidEventType
	}
	fp, err := o.Fingerprint(fingerprintFields...)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{Key: id, Type: typ, Fingerprint: fp}, nil
}
