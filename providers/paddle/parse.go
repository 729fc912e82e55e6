package paddle

import (
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names (compared case-insensitively, with Unicode folding, in every
	// object at any depth). A field Parse reads that the body spells only in
	// another case ("Event_ID") is refused too, with the error for that
	// field.
	ErrNotJSON = fmt.Errorf("%w: paddle: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventID means the notification has no usable event_id: missing,
	// not a string, empty, or not a token of at most MaxTokenBytes.
	ErrNoEventID = fmt.Errorf("%w: paddle: notification has no usable event_id", providers.ErrNoEventKey)
	// ErrInvalidEventType means event_type is present but not a string, or
	// not a token that can be sent as a header value.
	ErrInvalidEventType = fmt.Errorf("%w: paddle: event_type is invalid", providers.ErrNoEventKey)
)

// MaxTokenBytes is the longest event_id or event_type Parse accepts.
// Paddle's are about 30 bytes (evt_ and a 26-character id).
const MaxTokenBytes = 255

// fingerprintFields are the notification's members that Paddle keeps the
// same across its retries of one notification and across a replay of the
// event (which sends the same event as a new notification). Left out:
// notification_id, which a replay changes. Changing this list changes
// every stored fingerprint: retries in flight across the deploy would get
// 422.
var fingerprintFields = []string{"event_id", "event_type", "occurred_at", "data"}

// event derives the event from a verified body: Key is event_id, Type is
// event_type (empty when absent or null), and Fingerprint the canonical hex
// SHA-256 of fingerprintFields. Its errors wrap providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	id, ok, err := o.String("event_id")
	if err != nil || !ok || !providers.IsToken(id, MaxTokenBytes) {
		return providers.Event{}, ErrNoEventID
	}
	typ, ok, err := o.String("event_type")
	if err != nil || (ok && typ != "" && !providers.IsToken(typ, MaxTokenBytes)) {
		return providers.Event{}, ErrInvalidEventType
	}
	fp, err := o.Fingerprint(fingerprintFields...)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{Key: id, Type: typ, Fingerprint: fp}, nil
}
