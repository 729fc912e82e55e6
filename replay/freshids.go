package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// ErrNoEventID is wrapped by FreshID's error when replay does not know
// where a fixture keeps its event id, or the fixture has none there.
var ErrNoEventID = errors.New("replay: no event id to rewrite")

// EventIDPaths says where provider's body holds what its event key is made
// of: member names separated by dots, "*" for every member of an object
// and "[]" for every element of an array. Every string found at any path
// gets the suffix, so a provider whose key takes one of several shapes
// (Xendit's) lists each. Rewriting a signed member is safe: replay signs
// the rewritten body. A provider not listed here gets the paths where
// most providers keep their event id, and known is false. The keys
// themselves are each adapter's (docs/contract.md, "Event keys").
func EventIDPaths(provider string) (paths []string, known bool) {
	known = true
	switch provider {
	case "stripe":
		paths = []string{"id"}
	case "paddle":
		paths = []string{"event_id"}
	case "midtrans":
		paths = []string{"transaction_id"}
	case "xendit":
		paths = []string{"id", "payment_id", "data.id", "data.payment_id"}
	case "razorpay":
		paths = []string{"payload.*.entity.id"}
	case "doku":
		paths = []string{"order.invoice_number"}
	case "adyen":
		paths = []string{"notificationItems.[].NotificationRequestItem.pspReference"}
	case "standard":
		// Keyed on webhook-id, which replay derives from a digest of the
		// body: any change to it is a fresh id.
		paths = []string{"data.id", "id"}
	case "duitku":
		paths = []string{"merchantOrderId"} // a form field
	case "gocardless":
		paths = []string{"events.[].id"}
	case "coinbase":
		paths = []string{"event.id"}
	default:
		paths, known = []string{"id", "event_id", "data.id"}, false
	}
	return paths, known
}

// FreshID returns f's body with suffix appended to its event id, so that
// replaying it is a new event to the receiver: a rehearsal (a core service
// answering 503, say) can run again, with another suffix, without deleting
// keys from the store. The same suffix gives the same body, so a second
// run with it is a provider's retry of the same events. A JSON body is re-encoded (members in
// name order, numbers as written); a form body (Duitku's) keeps its
// fields' order.
func FreshID(f Fixture, suffix string) ([]byte, error) {
	paths, _ := EventIDPaths(f.Provider)
	return freshID(f, paths, suffix)
}

// eventIDFields is implemented by a signer that names the body members
// its event key is made of (a provider spec's replay.id_field), for a
// provider EventIDPaths does not know.
type eventIDFields interface {
	EventIDFields() []string
}

// freshID is FreshID with the paths to rewrite.
func freshID(f Fixture, paths []string, suffix string) ([]byte, error) {
	if lettersAndDigitsOnly(f.Provider) {
		suffix = strings.Map(func(r rune) rune {
			if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return r
			}
			return -1
		}, suffix)
		if suffix == "" {
			return nil, fmt.Errorf("%w: %s: %s ids are letters and digits, and the suffix has none", ErrNoEventID, f.Path, f.Provider)
		}
	}
	body := bytes.TrimSpace(f.Body)
	if len(body) > 0 && body[0] != '{' {
		return freshFormID(f, paths, suffix)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: fresh id: not JSON: %w", f.Path, err)
	}
	n := 0
	for _, p := range paths {
		doc = rewrite(doc, strings.Split(p, "."), suffix, &n)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s has no string at %s (%s)", ErrNoEventID, f.Path, strings.Join(paths, ", "), f.Provider)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("%s: fresh id: %w", f.Path, err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// rewrite appends suffix to every string at path in v, counting them in n.
func rewrite(v any, path []string, suffix string, n *int) any {
	if len(path) == 0 {
		switch v := v.(type) {
		case string:
			if v != "" {
				*n++
				return v + suffix
			}
		case json.Number:
			// A numeric id stays a number: it takes the suffix's digits.
			if digits := strings.Map(keepDigit, suffix); digits != "" {
				*n++
				return json.Number(string(v) + digits)
			}
		}
		return v
	}
	switch v := v.(type) {
	case map[string]any:
		for name, child := range v {
			if path[0] == "*" || path[0] == name {
				v[name] = rewrite(child, path[1:], suffix, n)
			}
		}
	case []any:
		if path[0] == "[]" {
			for i, child := range v {
				v[i] = rewrite(child, path[1:], suffix, n)
			}
		}
	}
	return v
}

// freshFormID rewrites the named fields of a form body, in place, keeping
// the order of its fields.
func freshFormID(f Fixture, fields []string, suffix string) ([]byte, error) {
	pairs := strings.Split(string(bytes.TrimSpace(f.Body)), "&")
	n := 0
	for i, pair := range pairs {
		name, value, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(name)
		if err != nil {
			return nil, fmt.Errorf("%s: fresh id: not a form: %w", f.Path, err)
		}
		for _, field := range fields {
			if key == field && value != "" {
				pairs[i] = name + "=" + value + url.QueryEscape(suffix)
				n++
			}
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s has no field %s (%s)", ErrNoEventID, f.Path, strings.Join(fields, ", "), f.Provider)
	}
	return []byte(strings.Join(pairs, "&")), nil
}

func keepDigit(r rune) rune {
	if r >= '0' && r <= '9' {
		return r
	}
	return -1
}

// lettersAndDigitsOnly reports whether provider's ids take letters and
// digits only, so that a suffix keeps only those: Adyen reads a
// pspReference in no other format (providers/adyen/format.go).
func lettersAndDigitsOnly(provider string) bool {
	return provider == "adyen"
}

// withFreshIDs returns a copy of fixtures whose signed bodies carry
// opts.IDSuffix, or fixtures itself when it is empty.
func withFreshIDs(fixtures []Fixture, opts Options) ([]Fixture, error) {
	if opts.IDSuffix == "" {
		return fixtures, nil
	}
	out := make([]Fixture, len(fixtures))
	for i, f := range fixtures {
		out[i] = f
		if opts.Signers[f.Provider] == nil {
			continue
		}
		paths, _ := EventIDPaths(f.Provider)
		if named, ok := opts.Signers[f.Provider].(eventIDFields); ok && len(named.EventIDFields()) > 0 {
			paths = named.EventIDFields()
		}
		body, err := freshID(f, paths, opts.IDSuffix)
		if err != nil {
			return nil, err
		}
		out[i].Body = body
	}
	return out, nil
}
