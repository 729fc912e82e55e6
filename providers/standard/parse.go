package standard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// Limits on what goes into the event key and the Webhook-Event-Type header.
const (
	// MaxIDBytes is the longest webhook-id accepted: Svix's are 31 bytes
	// (msg_ and 27), and "standard:" and the id stay well under the
	// store's key limit.
	MaxIDBytes = 255
	// MaxTypeBytes is the longest type accepted.
	MaxTypeBytes = 255
)

// Parse's errors. Each wraps providers.ErrMalformed.
var (
	// ErrNoEventKey means the webhook-id is not a usable key (longer than
	// MaxIDBytes, or holding anything but printable ASCII without spaces).
	ErrNoEventKey = fmt.Errorf("%w: standard: no usable webhook-id", providers.ErrNoEventKey)
	// ErrDuplicateName means the body is a JSON object that names a member
	// twice, at any depth, exactly or in two spellings a case-insensitive
	// decoder takes for one ("type" and "Type"): webhookd and the core
	// service could read two different events out of it.
	ErrDuplicateName = fmt.Errorf("%w: standard: body names a member twice", providers.ErrMalformed)
	// ErrInvalidEventType means the body's type is present but not a
	// string, not a token that can be sent as a header value, or spelled
	// only another way ("Type").
	ErrInvalidEventType = fmt.Errorf("%w: standard: type is invalid", providers.ErrNoEventKey)
)

// Parse derives the one event of a verified delivery: Key is its
// webhook-id (or svix-id), Type the body's "type" member when the body is a
// JSON object with one (else empty: the body may be any bytes), and
// Fingerprint the hex SHA-256 of the body's bytes, which a sender resends
// unchanged on every retry of a message. Its errors wrap
// providers.ErrMalformed.
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	m, err := readHeaders(d.Header)
	if err != nil || !providers.IsToken(m.id, MaxIDBytes) {
		return nil, ErrNoEventKey
	}
	typ, err := eventType(d.Body)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(d.Body)
	return []providers.Item{{Event: providers.Event{Key: m.id, Type: typ, Fingerprint: hex.EncodeToString(sum[:])}, Body: d.Body}}, nil
}

// eventType returns the type member of a JSON object body, "" for a body
// that is not a JSON object or has no (or a null) type.
func eventType(body []byte) (string, error) {
	o, err := rawjson.Parse(body)
	switch {
	case errors.Is(err, rawjson.ErrNotObject):
		return "", nil
	case err != nil:
		return "", ErrDuplicateName
	}
	typ, _, err := o.String("type")
	if err != nil {
		return "", ErrInvalidEventType
	}
	if typ != "" && !providers.IsToken(typ, MaxTypeBytes) {
		return "", ErrInvalidEventType
	}
	return typ, nil
}
