package stripe

import (
	"bytes"
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNotJSON means the body is not a JSON object with unique member
	// names. A repeated name (two ids, two types; "type" and "Type", since
	// Go's encoding/json matches names case-insensitively; in any object at
	// any depth) is refused rather than resolved: webhookd and the core
	// service that gets the raw body could pick different values, and then
	// the event keyed here and the event the core acts on would not be the
	// same. A field Parse reads that the body spells only in another case
	// ("Type") is refused too, with the error for that field.
	ErrNotJSON = fmt.Errorf("%w: stripe: body is not a JSON object with unique member names", providers.ErrMalformed)
	// ErrNoEventID means the event has no usable id: it is missing, not a
	// string, empty, longer than MaxTokenBytes, or has characters other than
	// printable ASCII without spaces.
	ErrNoEventID = fmt.Errorf("%w: stripe: event has no usable id", providers.ErrNoEventKey)
	// ErrInvalidEventType means the event's type is present but not a
	// string, or not a token that can be sent as a header value.
	ErrInvalidEventType = fmt.Errorf("%w: stripe: event type is invalid", providers.ErrNoEventKey)
)

// MaxTokenBytes is the longest event id or type Parse accepts. Stripe's are
// a few dozen bytes; the limit keeps the dedupe key ("stripe:" + id) well
// under LMDB's 511-byte key limit.
const MaxTokenBytes = 255

// fingerprintFields are the top-level event fields that Stripe keeps identical
// across its retries of one event, in the order they are fingerprinted. Left
// out on purpose: pending_webhooks (it counts down between attempts) and
// request (descriptive, and not part of what the event says happened); the
// signature and its timestamp are in the header, not the body.
//
// Changing this list, or the encoding in fingerprint, changes every stored
// fingerprint: retries of events in flight across the deploy would get 422.
var fingerprintFields = [...]string{
	"id", "object", "type", "api_version", "account", "created", "livemode", "data",
}

// event derives the event from a verified body: Key is the event's id
// (evt_...), Type its type, and Fingerprint a hex SHA-256 of
// fingerprintFields. Its errors wrap providers.ErrMalformed.
func (a *Adapter) event(body []byte) (providers.Event, error) {
	o, err := rawjson.Parse(body)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}

	id, err := tokenField(o, "id")
	if err != nil || id == "" {
		return providers.Event{}, ErrNoEventID
	}
	typ, err := tokenField(o, "type")
	if err != nil {
		return providers.Event{}, ErrInvalidEventType
	}
	fp, err := fingerprint(o)
	if err != nil {
		return providers.Event{}, ErrNotJSON
	}
	return providers.Event{Key: id, Type: typ, Fingerprint: fp}, nil
}

// tokenField returns the string field name, or "" when it is absent or null.
// The value must be a short run of printable ASCII without spaces, because it
// ends up in a store key and in a header sent downstream; anything else is an
// error.
func tokenField(o *rawjson.Object, name string) (string, error) {
	s, ok, err := o.String(name)
	if err != nil || !ok {
		return "", err
	}
	if len(s) > MaxTokenBytes {
		return "", fmt.Errorf("%s longer than %d bytes", name, MaxTokenBytes)
	}
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c > '~' {
			return "", fmt.Errorf("%s has a byte outside printable ASCII", name)
		}
	}
	return s, nil
}

// fingerprint hashes the fingerprintFields that are present, encoded as one
// JSON object with the keys in fingerprintFields order and each value
// compacted. The encoding is unambiguous because every value is itself valid
// JSON, and an absent field is left out rather than written as null. Compact
// only removes insignificant white space, so a retry that Stripe serialises
// identically fingerprints identically whatever its indentation. (This is
// not rawjson's canonical Fingerprint, which would also sort nested members
// and normalise escapes: the encoding here predates it and is kept byte for
// byte, since changing it changes every stored fingerprint.)
func fingerprint(o *rawjson.Object) (string, error) {
	// Look the members up first so that the buffer is sized once: growing
	// it member by member (data is most of the body) cost more than the
	// hashing. The buffer is reused across deliveries (HexSumOf).
	var values [len(fingerprintFields)]rawjson.Member
	size := 2
	for i, name := range fingerprintFields {
		m, ok, err := o.Get(name)
		if err != nil {
			return "", err
		}
		if ok {
			values[i] = m
			size += len(name) + len(m.Value) + 4
		}
	}
	return rawjson.HexSumOf(func(buf *bytes.Buffer) error {
		buf.Grow(size)
		buf.WriteByte('{')
		for i, name := range fingerprintFields {
			m := values[i]
			if m.Value == nil {
				continue
			}
			if buf.Len() > 1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('"')
			buf.WriteString(name)
			buf.WriteString(`":`)
			m.AppendCompact(buf) // as json.Compact (see TestAppendCompact)
		}
		buf.WriteByte('}')
		return nil
	})
}
