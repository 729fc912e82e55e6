package razorpay

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names (compared case-insensitively, with Unicode folding, in every
	// object at any depth).
	ErrNotJSON = fmt.Errorf("%w: razorpay: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means a key part is missing or unusable: contains is
	// not a non-empty list of names, the payload has no entity with an id
	// under the first of them, the id is not a token without ":", or
	// created_at is not a non-negative integer.
	ErrNoEventKey = fmt.Errorf("%w: razorpay: no usable event key", providers.ErrNoEventKey)
	// ErrInvalidEventType means event is missing, not a string, or not a
	// token without ":".
	ErrInvalidEventType = fmt.Errorf("%w: razorpay: event is invalid", providers.ErrNoEventKey)
)

// MaxFieldBytes is the longest event, entity name or entity id accepted.
// Three of them and their separators, behind "razorpay:", stay under the
// dedupe store's key limit.
const MaxFieldBytes = 120

// maxCreatedAtDigits bounds created_at: unix seconds, far fewer digits.
const maxCreatedAtDigits = 20

// fingerprintFields are the event's members that Razorpay sends unchanged
// on every retry of one event, fingerprinted canonically (member order and
// white space do not count): the event envelope and the entity snapshots in
// payload, taken when the event was created. Any member Razorpay adds later
// is left out, so that a retry carrying it is not answered 422.
//
// Changing this list changes every stored fingerprint: retries of events in
// flight across the deploy would get 422.
var fingerprintFields = []string{"entity", "account_id", "event", "contains", "payload", "created_at"}

// event derives the event from a verified body (docs/contract.md, "Event
// keys"): Key is event:id:created_at, where id is that of the payload
// entity that contains names first (payload.payment.entity.id for
// ["payment"], payload.refund.entity.id for ["refund","payment"]) and
// created_at the event's own; Type is event. Every part is signed, unlike
// the x-razorpay-event-id header. No part may hold ":" (created_at is
// digits), so parts cannot run into each other. Its errors wrap
// providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	event, ok, err := o.String("event")
	if err != nil || !ok || !isPart(event) {
		return providers.Event{}, ErrInvalidEventType
	}
	id, err := entityID(o)
	if err != nil {
		return providers.Event{}, err
	}
	created, err := createdAt(o)
	if err != nil {
		return providers.Event{}, err
	}
	fp, err := o.Fingerprint(fingerprintFields...)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{Key: event + ":" + id + ":" + created, Type: event, Fingerprint: fp}, nil
}

// entityID returns payload.<contains[0]>.entity.id.
func entityID(o *rawjson.Object) (string, error) {
	m, ok, err := o.Get("contains")
	if err != nil || !ok {
		return "", fmt.Errorf("%w (no contains)", ErrNoEventKey)
	}
	var contains []string
	if err := json.Unmarshal(m.Value, &contains); err != nil || len(contains) == 0 || !isPart(contains[0]) {
		return "", fmt.Errorf("%w (contains is not a list of names)", ErrNoEventKey)
	}
	payload, ok, err := o.Object("payload")
	if err != nil || !ok {
		return "", fmt.Errorf("%w (no payload object)", ErrNoEventKey)
	}
	named, ok, err := payload.Object(contains[0])
	if err != nil || !ok {
		return "", fmt.Errorf("%w (payload has no object for the first of contains)", ErrNoEventKey)
	}
	entity, ok, err := named.Object("entity")
	if err != nil || !ok {
		return "", fmt.Errorf("%w (no entity)", ErrNoEventKey)
	}
	id, ok, err := entity.String("id")
	if err != nil || !ok || !isPart(id) {
		return "", fmt.Errorf("%w (entity id missing or not a token)", ErrNoEventKey)
	}
	return id, nil
}

// createdAt returns the event's created_at as its digits, as sent.
func createdAt(o *rawjson.Object) (string, error) {
	m, ok, err := o.Get("created_at")
	if err != nil || !ok {
		return "", fmt.Errorf("%w (no created_at)", ErrNoEventKey)
	}
	s := string(m.Value)
	if s == "" || len(s) > maxCreatedAtDigits || strings.TrimLeft(s, "0123456789") != "" {
		return "", fmt.Errorf("%w (created_at is not unix seconds)", ErrNoEventKey)
	}
	return s, nil
}

// isPart reports whether s can be one part of a key: a token without ":".
func isPart(s string) bool {
	return providers.IsToken(s, MaxFieldBytes) && !strings.Contains(s, ":")
}
