package braintree

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// Parse's errors. Each wraps providers.ErrMalformed (400): the payload is
// authentic, but no event can be derived from it.
var (
	// ErrNotNotification means bt_payload is not the base64 of an XML
	// document whose root is <notification> (a document type declaration,
	// or nesting deeper than MaxDepth, counts as not XML).
	ErrNotNotification = fmt.Errorf("%w: braintree: bt_payload is not a notification", providers.ErrMalformed)
	// ErrNoKind means the notification has no <kind>, two, or one that is
	// not a usable token without ":" (see MaxKindBytes).
	ErrNoKind = fmt.Errorf("%w: braintree: no usable kind", providers.ErrMalformed)
)

// MaxKindBytes is the longest kind accepted. Braintree's are snake_case
// words (subscription_charged_successfully); with the digest and
// "braintree:" the key stays far under the dedupe store's limit.
const MaxKindBytes = 100

// MaxDepth is the deepest element nesting a notification may have.
// Braintree's subjects nest a few levels; the bound keeps a hostile (but
// correctly signed, so only a leaked key's) payload from costing more
// than its size.
const MaxDepth = 64

// event derives the event from a verified form body (docs/contract.md,
// "Event keys"): Key is kind:<lowercase hex SHA-256 of the decoded
// XML>, Type is kind, and the fingerprint is the same digest. Braintree
// sends no event id, and a changed payload is another event. kind may not
// hold ":", so the key splits back one way. Its errors wrap
// providers.ErrMalformed, or providers.ErrUnauthorized for a body that
// Verify refuses too.
func event(body []byte) (providers.Event, error) {
	f, err := parseForm(body)
	if err != nil {
		return providers.Event{}, err
	}
	payload, _, err := f.Get(FieldPayload)
	if err != nil || payload == "" || !isPayload(payload) {
		return providers.Event{}, ErrInvalidPayload
	}
	doc, err := decodePayload(payload)
	if err != nil {
		return providers.Event{}, fmt.Errorf("%w (not base64)", ErrNotNotification)
	}
	kind, err := notificationKind(doc)
	if err != nil {
		return providers.Event{}, err
	}
	sum := sha256.Sum256(doc)
	digest := hex.EncodeToString(sum[:])
	return providers.Event{Key: kind + ":" + digest, Type: kind, Fingerprint: digest}, nil
}

// decodePayload returns the bytes bt_payload encodes: standard base64
// with padding, its line feeds (anywhere, as MIME base64 puts them)
// ignored. Strict decoding refuses non-zero padding bits, so that one
// document has one encoding apart from its line breaks.
func decodePayload(payload string) ([]byte, error) {
	return base64.StdEncoding.Strict().DecodeString(strings.ReplaceAll(payload, "\n", ""))
}

// notificationKind reads doc as XML and returns the text of the <kind>
// element directly under its <notification> root. It refuses a document
// type declaration (no entity beyond XML's five predefined ones is ever
// defined, let alone expanded), nesting deeper than MaxDepth, anything
// after the root element but white space, comments and processing
// instructions, and a root with no <kind> or two. Token (not RawToken)
// checks that every element is closed by its own end tag. The kind is its
// text without surrounding white space.
func notificationKind(doc []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	var (
		depth   int
		rooted  bool // the root element has been opened
		inKind  bool
		kind    strings.Builder
		kinds   int
		tooDeep = fmt.Errorf("%w (nested deeper than %d)", ErrNotNotification, MaxDepth)
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%w (not XML)", ErrNotNotification)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if rooted || t.Name.Space != "" || t.Name.Local != "notification" {
					return "", fmt.Errorf("%w (the root is not <notification>)", ErrNotNotification)
				}
				rooted = true
			}
			depth++
			if depth > MaxDepth {
				return "", tooDeep
			}
			if depth == 2 && t.Name.Space == "" && t.Name.Local == "kind" {
				inKind = true
				kinds++
			} else if inKind {
				return "", fmt.Errorf("%w (kind holds an element)", ErrNoKind)
			}
		case xml.EndElement:
			depth--
			inKind = false
		case xml.CharData:
			if inKind {
				kind.Write(t)
			} else if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return "", fmt.Errorf("%w (text outside the root)", ErrNotNotification)
			}
		case xml.Directive:
			return "", fmt.Errorf("%w (a document type declaration)", ErrNotNotification)
		}
	}
	switch k := strings.TrimSpace(kind.String()); {
	case !rooted || depth != 0:
		return "", fmt.Errorf("%w (no complete <notification>)", ErrNotNotification)
	case kinds != 1:
		return "", fmt.Errorf("%w (%d <kind> elements)", ErrNoKind, kinds)
	case !providers.IsToken(k, MaxKindBytes) || strings.Contains(k, ":"):
		return "", ErrNoKind
	default:
		return k, nil
	}
}
