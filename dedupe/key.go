package dedupe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Key addresses one record: an event of a source, as delivered to one
// destination. It is the one owner of the store key's layout: the
// receiver builds it, the forward reads its Idempotency-Key from it, the
// admin API and keys split stored keys with ParseKey, and every backend
// refuses what Check refuses (CheckKey), so a key valid on one backend is
// valid on all.
//
// The stored form is "<source>:<event>" for the destination named
// DefaultDestination, and "<source>:<event>" + DestinationSep +
// "<destination>" for any other. The default destination is the only one
// an environment-made configuration has, so the records written before
// destinations existed ("stripe:evt_1") keep their keys and an upgrade
// replays what was finished before it. The rule depends on the
// destination's name only, never on how many destinations an event has:
// a reload that adds a second destination to a route leaves the first
// one's records where they are.
type Key struct {
	// Source is the source's name: [a-z0-9][a-z0-9-]{0,62} (ValidName).
	// A source made from the environment is named after its provider.
	Source string
	// Event is the provider's event key: not empty, UTF-8, no control
	// characters (so it can be forwarded as a header and stored as
	// Postgres text).
	Event string
	// Destination is the destination's name (ValidName), or "" for
	// DefaultDestination.
	Destination string
}

// DefaultDestination is the destination of a configuration made from the
// environment (WEBHOOKD_DOWNSTREAM_URL). Its records' keys carry no
// destination.
const DefaultDestination = "default"

// DestinationSep separates the destination from the event in a stored key.
// It is a control character, which Check refuses in an event key, so a
// stored key splits back one way only.
const DestinationSep = '\x1f'

// MaxNameLen is the longest source or destination name.
const MaxNameLen = 63

// ValidName reports whether s is a valid source or destination name:
// [a-z0-9][a-z0-9-]{0,62}. The names become route segments, metric labels
// and parts of stored keys, and never hold the separators of a key.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// NewKey returns the checked key of event from source for destination
// ("" or DefaultDestination for the default one).
func NewKey(source, event, destination string) (Key, error) {
	if destination == DefaultDestination {
		destination = ""
	}
	k := Key{Source: source, Event: event, Destination: destination}
	return k, k.Check()
}

// ParseKey splits a stored key (String's form) back into its parts and
// checks them. The source ends at the first ':' (an event key may hold
// more: xendit:invoice.paid:inv_1).
func ParseKey(s string) (Key, error) {
	source, rest, found := strings.Cut(s, ":")
	if !found {
		return Key{}, fmt.Errorf("%w: %q is not <source>:<event-key>", ErrInvalidKey, s)
	}
	event, dest, withDest := strings.Cut(rest, string(DestinationSep))
	if withDest && dest == "" {
		return Key{}, fmt.Errorf("%w: empty destination", ErrInvalidKey)
	}
	k := Key{Source: source, Event: event, Destination: dest}
	if err := k.Check(); err != nil {
		return Key{}, err
	}
	if dest == DefaultDestination {
		// Stored without it; two spellings would make two records.
		return Key{}, fmt.Errorf("%w: destination %q is stored without its name", ErrInvalidKey, dest)
	}
	return k, nil
}

// Check refuses, with ErrInvalidKey, a key whose parts are not valid or
// whose stored form is longer than MaxKeyLen.
func (k Key) Check() error {
	switch {
	case !ValidName(k.Source):
		return fmt.Errorf("%w: source %q is not [a-z0-9][a-z0-9-]{0,62}", ErrInvalidKey, k.Source)
	case k.Event == "":
		return fmt.Errorf("%w: empty event key", ErrInvalidKey)
	case !utf8.ValidString(k.Event):
		return fmt.Errorf("%w: event key is not UTF-8", ErrInvalidKey)
	case hasControl(k.Event):
		return fmt.Errorf("%w: event key holds a control character", ErrInvalidKey)
	case k.Destination != "" && !ValidName(k.Destination):
		return fmt.Errorf("%w: destination %q is not [a-z0-9][a-z0-9-]{0,62}", ErrInvalidKey, k.Destination)
	}
	if n := k.len(); n > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidKey, n, MaxKeyLen)
	}
	return nil
}

func (k Key) len() int {
	n := len(k.Source) + 1 + len(k.Event)
	if k.Destination != "" && k.Destination != DefaultDestination {
		n += 1 + len(k.Destination)
	}
	return n
}

// hasControl reports whether s holds an ASCII control character (C0 or
// DEL): it would corrupt a forwarded header, and DestinationSep is one.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// String returns the stored form of the key (see Key).
func (k Key) String() string {
	if k.Destination == "" || k.Destination == DefaultDestination {
		return k.ID()
	}
	return k.Source + ":" + k.Event + string(DestinationSep) + k.Destination
}

// ID is the event's Idempotency-Key, "<source>:<event>": the same for
// every destination of the event, so that each core service dedupes on
// the same value.
func (k Key) ID() string { return k.Source + ":" + k.Event }

// DestinationName is the destination's name, DefaultDestination for "".
func (k Key) DestinationName() string {
	if k.Destination == "" {
		return DefaultDestination
	}
	return k.Destination
}

// CheckKey refuses, with ErrInvalidKey, a stored key that ParseKey does
// not accept. Every backend checks with it, and nothing else.
func CheckKey(key string) error {
	_, err := ParseKey(key)
	return err
}

// MaxKeyLen is the longest store key any backend accepts: the LMDB
// backend's limit (LMDB's 511-byte keys less its expiry index's 8-byte time
// prefix), kept by every backend so that a key valid on one is valid on all.
const MaxKeyLen = 511 - 8

// ErrAmbiguous means a key names an event that went to several
// destinations and the caller did not say which.
var ErrAmbiguous = errors.New("dedupe: the event went to several destinations")

// Lister is what ResolveKey reads of a store.
type Lister interface {
	List(ctx context.Context, o ListOptions) ([]Record, error)
}

// ResolveKey is the stored key of the record that id (an Idempotency-Key,
// <source>:<event-key>, or a stored key) and destination name: the
// operator's way to a record (admin API, keys). Without a destination,
// the event's only record is meant; when it has several, ErrAmbiguous
// names them.
func ResolveKey(ctx context.Context, s Lister, id, destination string) (string, error) {
	k, err := ParseKey(id)
	if err != nil {
		return "", err
	}
	if destination != "" || k.Destination != "" {
		if destination != "" {
			k.Destination = destination
			if destination == DefaultDestination {
				k.Destination = ""
			}
		}
		if err := k.Check(); err != nil {
			return "", err
		}
		return k.String(), nil
	}
	// Bytewise, the event's own records come first: its key, then its key
	// and DestinationSep (below every printable byte), then longer keys.
	recs, err := s.List(ctx, ListOptions{Prefix: k.ID(), Limit: 64})
	if err != nil {
		return "", err
	}
	var names []string
	only := ""
	for _, rec := range recs {
		rk, err := ParseKey(rec.Key)
		if err != nil || rk.ID() != k.ID() {
			continue // another event whose key starts with this one's
		}
		names = append(names, rk.DestinationName())
		only = rec.Key
	}
	switch len(names) {
	case 0:
		return k.String(), nil // the store answers ErrNotFound
	case 1:
		return only, nil
	}
	return "", fmt.Errorf("%w: %s; name one (?destination=NAME, --destination NAME)", ErrAmbiguous, strings.Join(names, ", "))
}
