package xendit

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names (compared case-insensitively, with Unicode folding, in every
	// object at any depth). A field Parse reads that the body spells only in
	// another case ("Status") is refused too, with the error for that field.
	ErrNotJSON = fmt.Errorf("%w: xendit: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means the body has none of the fields its shape is keyed
	// by, or one of them is not a string or not a usable token (see
	// MaxFieldBytes), or a flat body's id holds a "." (see Parse).
	ErrNoEventKey = fmt.Errorf("%w: xendit: no usable event key", providers.ErrNoEventKey)
	// ErrInvalidEventType means event or status is present but not a string
	// or not a usable token, or an envelope's event holds no "." (see
	// Parse).
	ErrInvalidEventType = fmt.Errorf("%w: xendit: event or status is invalid", providers.ErrNoEventKey)
)

// MaxFieldBytes is the longest value of any field that goes into an event
// key or type. Three of them and their separators, behind "xendit:", stay
// under the dedupe store's key limit.
const MaxFieldBytes = 120

// event derives the event from a verified body (docs/contract.md, "Event keys"):
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
// ":", so the parts cannot run into each other, and keys of different
// shapes cannot collide: a flat body's one-part key never equals an
// envelope's or an invoice's two or three parts, and an envelope's event
// must hold a "." while a flat body's id with a status must not, so
// event:data.id never equals id:status. Xendit's envelope events are all
// dotted resource.action names (payment.succeeded, payment.capture,
// refund.succeeded, payment_request.expiry, v3_payout.succeeded) and its
// ids never hold a dot (invoice ids are hex, the others prefixed like
// py-..., rfd-...), so no genuine callback is refused; a body that breaks
// either rule is refused with 400 rather than keyed where it could take
// another event's key and leave that event with 422. The key formats of
// legitimate callbacks stay those of docs/contract.md. Fingerprint covers the
// fields that say what happened (see envelopeFields and flatFields), not the
// whole body. Parse's errors wrap providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
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
	var data *rawjson.Object // nil unless the body is an envelope
	if event != "" {
		data, _, err = o.Object("data")
		if err != nil {
			return providers.Event{}, fmt.Errorf("%w (data is not an object)", ErrNoEventKey)
		}
	}
	if data != nil {
		if !strings.Contains(event, ".") {
			return providers.Event{}, fmt.Errorf("%w (an envelope's event is a dotted name)", ErrInvalidEventType)
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
	fp, err := fingerprint(o, data)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{Key: key, Type: typ, Fingerprint: fp}, nil
}

// The fingerprint covers the fields that identify what a callback says
// happened: its ids, status, amounts and currency. Xendit documents no
// field as stable across its retries and dashboard resends, so everything
// else is left out (timestamps such as updated and created, descriptions,
// metadata, payer and channel details, and any field Xendit adds later): a
// genuine retry that differs there must not get a permanent 422. Amounts are
// compared by their raw JSON text (185000 and 185000.0 differ), strings by
// their decoded value.
//
// Changing these lists changes every stored fingerprint: retries of events
// in flight across the deploy would get 422.
var (
	// envelopeFields are the top-level fields of an envelope ({event,
	// data}) that are fingerprinted.
	envelopeFields = []string{"event", "business_id"}
	// envelopeDataFields are the fields of an envelope's data that are
	// fingerprinted (Payments API payments and captures, refunds).
	envelopeDataFields = []string{
		"id", "payment_id", "capture_id", "payment_request_id", "reference_id", "status", "failure_code",
		"amount", "request_amount", "captured_amount", "currency",
	}
	// flatFields are the fingerprinted fields of a flat body (invoices,
	// virtual account payments).
	flatFields = []string{
		"id", "external_id", "status", "payment_id", "callback_virtual_account_id",
		"amount", "paid_amount", "currency", "payment_method", "bank_code", "account_number",
	}
)

// fingerprint returns the hex SHA-256 of the chosen fields, encoded as one
// JSON object in canonical form: the flatFields of o when data is nil,
// otherwise the envelopeFields of o with the envelopeDataFields of data
// under "data". Absent fields are left out, so absent and null differ.
func fingerprint(o, data *rawjson.Object) (string, error) {
	return rawjson.HexSumOf(func(buf *bytes.Buffer) error {
		buf.WriteByte('{')
		if data == nil {
			if err := o.AppendMembers(buf, flatFields); err != nil {
				return err
			}
		} else {
			if err := o.AppendMembers(buf, envelopeFields); err != nil {
				return err
			}
			if buf.Len() > 1 {
				buf.WriteByte(',')
			}
			buf.WriteString(`"data":{`)
			if err := data.AppendMembers(buf, envelopeDataFields); err != nil {
				return err
			}
			buf.WriteByte('}')
		}
		buf.WriteByte('}')
		return nil
	})
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
		if strings.Contains(id, ".") {
			return "", fmt.Errorf("%w (id looks like an event name)", ErrNoEventKey)
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
