package xendit

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names (at the top level and, for an envelope, in data).
	ErrNotJSON = fmt.Errorf("%w: xendit: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means the body has none of the fields its shape is keyed
	// by, or one of them is not a string or not a usable token (see
	// MaxFieldBytes).
	ErrNoEventKey = fmt.Errorf("%w: xendit: no usable event key", providers.ErrMalformed)
	// ErrInvalidEventType means event or status is present but not a string
	// or not a usable token.
	ErrInvalidEventType = fmt.Errorf("%w: xendit: event or status is invalid", providers.ErrMalformed)
)

// MaxFieldBytes is the longest value of any field that goes into an event
// key or type. Three of them and their separators, behind "xendit:", stay
// under the dedupe store's key limit.
const MaxFieldBytes = 120

// Parse derives the event from a verified body (CONTRACT.md, "Event keys"):
//
//   - a body with event and data (the Payments API and refund envelopes):
//     event:data.id, or event:data.payment_id when data has no id, followed
//     by :data.capture_id when present;
//   - otherwise a flat body with status (invoices): id:status, so that an
//     invoice that goes EXPIRED and then PAID is two events;
//   - otherwise (virtual account payments): payment_id, or else id.
//
// Type is event, or status for a flat body (empty when the body has
// neither). Empty and null fields count as absent. No key part may contain
// ":", so the parts cannot run into each other. Fingerprint covers the whole
// body in canonical form: Xendit resends the stored callback on a retry and
// documents no field that changes between attempts. Parse's errors wrap
// providers.ErrMalformed.
func (a *Adapter) Parse(body []byte) (providers.Event, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	event, err := part(o, "event", ErrInvalidEventType)
	if err != nil {
		return providers.Event{}, err
	}
	status, err := part(o, "status", ErrInvalidEventType)
	if err != nil {
		return providers.Event{}, err
	}

	var key string
	if event != "" && o.Has("data") {
		data, _, err := o.Object("data")
		if err != nil {
			return providers.Event{}, fmt.Errorf("%w (data is not an object)", ErrNoEventKey)
		}
		key, err = envelopeKey(event, data)
		if err != nil {
			return providers.Event{}, err
		}
	} else {
		key, err = flatKey(o, status)
		if err != nil {
			return providers.Event{}, err
		}
	}

	typ := event
	if typ == "" {
		typ = status
	}
	fp, err := o.Fingerprint()
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{Key: key, Type: typ, Fingerprint: fp}, nil
}

func envelopeKey(event string, data *rawjson.Object) (string, error) {
	id, err := part(data, "id", ErrNoEventKey)
	if err != nil {
		return "", err
	}
	if id != "" {
		return event + ":" + id, nil
	}
	paymentID, err := part(data, "payment_id", ErrNoEventKey)
	if err != nil {
		return "", err
	}
	if paymentID == "" {
		return "", fmt.Errorf("%w (data has neither id nor payment_id)", ErrNoEventKey)
	}
	captureID, err := part(data, "capture_id", ErrNoEventKey)
	if err != nil {
		return "", err
	}
	if captureID != "" {
		return event + ":" + paymentID + ":" + captureID, nil
	}
	return event + ":" + paymentID, nil
}

func flatKey(o *rawjson.Object, status string) (string, error) {
	id, err := part(o, "id", ErrNoEventKey)
	if err != nil {
		return "", err
	}
	if status != "" {
		if id == "" {
			return "", fmt.Errorf("%w (status without id)", ErrNoEventKey)
		}
		return id + ":" + status, nil
	}
	paymentID, err := part(o, "payment_id", ErrNoEventKey)
	if err != nil {
		return "", err
	}
	switch {
	case paymentID != "":
		return paymentID, nil
	case id != "":
		return id, nil
	}
	return "", fmt.Errorf("%w (no event, status, payment_id or id)", ErrNoEventKey)
}

// part reads the string field name of o as a key part: "" when absent, null
// or empty, and invalid (an error wrapping invalid) when it is not a string
// or not a token without ":".
func part(o *rawjson.Object, name string, invalid error) (string, error) {
	s, _, err := o.String(name)
	if err != nil {
		return "", fmt.Errorf("%w (%s is not a string)", invalid, name)
	}
	if s != "" && (!providers.IsToken(s, MaxFieldBytes) || strings.Contains(s, ":")) {
		return "", fmt.Errorf("%w (%s is not a short token of printable ASCII without spaces or colons)", invalid, name)
	}
	return s, nil
}
