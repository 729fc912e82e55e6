package doku

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
	// object at any depth), or an object Parse reads (order, service,
	// transaction) is not an object. A field Parse reads that the body
	// spells only in another case is refused too, with the error for that
	// field.
	ErrNotJSON = fmt.Errorf("%w: doku: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventKey means order.invoice_number, service.id or
	// transaction.status is missing, not a string, or not a usable token
	// (see MaxFieldBytes); service.id and transaction.status must not hold
	// a ":".
	ErrNoEventKey = fmt.Errorf("%w: doku: no usable order.invoice_number, service.id and transaction.status", providers.ErrNoEventKey)
)

// MaxFieldBytes is the longest value of a key part Parse accepts. DOKU's
// invoice numbers are at most 64 characters and its service ids and
// statuses short words; three parts and their separators, behind "doku:",
// stay under the dedupe store's key limit.
const MaxFieldBytes = 128

// The fingerprint covers what says what happened: the invoice, its amount,
// the service, acquirer and channel, the status and the request it answers.
// DOKU documents nothing as stable across its retries, so everything else
// (transaction.date, channel-specific blocks, fields DOKU adds later) is left
// out: a genuine retry that differs there must not get a permanent 422.
// Changing these lists changes every stored fingerprint: retries in flight
// across the deploy would get 422.
var fingerprintFields = []struct {
	object string
	fields []string
}{
	{"order", []string{"invoice_number", "amount"}},
	{"service", []string{"id"}},
	{"acquirer", []string{"id"}},
	{"channel", []string{"id"}},
	{"transaction", []string{"status", "original_request_id"}},
}

// event derives the event from a verified body (docs/contract.md, "Event
// keys"): Key is order.invoice_number:service.id:transaction.status, Type is
// service.id.transaction.status ("VIRTUAL_ACCOUNT.SUCCESS"), and Fingerprint
// a hex SHA-256 of the fields in fingerprintFields. service.id and
// transaction.status may not hold ":", so the key splits one way only from
// the right whatever the invoice number holds. Its errors wrap
// providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	objects := map[string]*rawjson.Object{}
	for _, f := range fingerprintFields {
		obj, _, err := o.Object(f.object)
		if err != nil {
			return providers.Event{}, fmt.Errorf("%w (%s)", ErrNotJSON, f.object)
		}
		objects[f.object] = obj
	}
	invoice, err := part(objects["order"], "invoice_number", true)
	if err != nil {
		return providers.Event{}, err
	}
	service, err := part(objects["service"], "id", false)
	if err != nil {
		return providers.Event{}, err
	}
	status, err := part(objects["transaction"], "status", false)
	if err != nil {
		return providers.Event{}, err
	}
	fp, err := fingerprint(objects)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{
		Key:         invoice + ":" + service + ":" + status,
		Type:        service + "." + status,
		Fingerprint: fp,
	}, nil
}

// part reads the string field name of o (nil when the object is absent) as
// a key part; colon says whether it may hold ":".
func part(o *rawjson.Object, name string, colon bool) (string, error) {
	if o == nil {
		return "", ErrNoEventKey
	}
	s, ok, err := o.String(name)
	switch {
	case err != nil || !ok:
		return "", ErrNoEventKey
	case !providers.IsToken(s, MaxFieldBytes) || (!colon && strings.Contains(s, ":")):
		return "", ErrNoEventKey
	}
	return s, nil
}

// fingerprint returns the hex SHA-256 of {"order":{...},"service":{...},...}
// with each object's fingerprinted fields in canonical form; absent objects
// and fields are left out, so absent and null differ.
func fingerprint(objects map[string]*rawjson.Object) (string, error) {
	return rawjson.HexSumOf(func(buf *bytes.Buffer) error {
		buf.WriteByte('{')
		for i, f := range fingerprintFields {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(`"` + f.object + `":{`)
			if obj := objects[f.object]; obj != nil {
				if err := obj.AppendMembers(buf, f.fields); err != nil {
					return err
				}
			}
			buf.WriteByte('}')
		}
		buf.WriteByte('}')
		return nil
	})
}
