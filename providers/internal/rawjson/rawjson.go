// Package rawjson reads the top-level members of one JSON object without
// re-serialising anything: each member's value is kept as the exact bytes
// that arrived, together with its offsets in the body. Adapters use it to
// hash a field's raw text (Midtrans signs the raw strings of three fields),
// to rewrite one value while leaving every other byte alone (Midtrans's
// signature_key), and to fingerprint chosen members canonically.
//
// It refuses a body that names the same member twice instead of picking one
// of the values: webhookd and the core service that receives the raw body
// could resolve the duplicate differently, and then the event webhookd keyed
// and the event the core acts on would not be the same. "The same" is as
// lenient as the common decoders are (see names.go): Go's encoding/json
// matches names case-insensitively with Unicode folding, last one wins, so
// "Transaction_Status" or "tranſaction_ſtatus" after "transaction_status"
// is refused, in every object at any depth. For the same reason a lookup of
// a name that the object spells only another way is an error (ErrVariant),
// never "absent": a folding decoder would read that member.
//
// It must never log or return any part of the body in an error.
package rawjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Errors returned by Parse.
var (
	// ErrNotObject means the body is not exactly one JSON object (empty,
	// invalid JSON, another kind of value, or trailing data after it).
	ErrNotObject = errors.New("rawjson: not a single JSON object")
	// ErrDuplicate means an object, at any depth, names one member more
	// than once, exactly or in two spellings a case-insensitive decoder
	// takes for one (see names.go).
	ErrDuplicate = errors.New("rawjson: member named more than once")
	// ErrVariant means a looked-up member is not spelled exactly as asked,
	// but in a way a case-insensitive decoder takes for the name asked.
	ErrVariant = errors.New("rawjson: member named in another spelling")
)

// Member is one top-level member of a parsed object.
type Member struct {
	// Value is the member's value exactly as it appears in the body
	// (Value == body[Start:End]), without surrounding white space.
	Value json.RawMessage
	// Start and End are Value's offsets in the parsed body.
	Start, End int
}

// IsNull reports whether the member's value is the JSON literal null.
func (m Member) IsNull() bool { return string(m.Value) == "null" }

// Object is a parsed JSON object: its top-level members by name.
type Object struct {
	members map[string]Member
	// open is the offset just past the object's opening brace.
	open int
}

// Parse reads body as exactly one JSON object (white space around it is
// allowed) and returns its top-level members. Nested values are validated,
// and their member names checked, but not split further; use Object.Object
// to read a nested object.
func Parse(body []byte) (*Object, error) { return parse(body, true) }

// parse is Parse; checked says whether to check the member names of every
// object in body, which a nested object's parent has already done.
func parse(body []byte, check bool) (*Object, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	o := &Object{members: make(map[string]Member), open: int(dec.InputOffset())}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, ErrNotObject
		}
		name, ok := tok.(string)
		if !ok {
			return nil, ErrNotObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, ErrNotObject
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		// The decoder reports the end of the value it returned; check that
		// the offsets really frame the value's bytes, since Sign rewrites
		// exactly this range.
		if start < 0 || end > len(body) || !bytes.Equal(body[start:end], raw) {
			return nil, ErrNotObject
		}
		if _, dup := o.members[name]; dup {
			return nil, ErrDuplicate
		}
		o.members[name] = Member{Value: raw, Start: start, End: end}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, ErrNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrNotObject
	}
	if check {
		if err := checkNames(body); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Len is the number of members.
func (o *Object) Len() int { return len(o.members) }

// Open is the offset in the body just past the object's opening brace, where
// a new first member can be inserted.
func (o *Object) Open() int { return o.open }

// Get returns the member called name. err wraps ErrVariant when there is
// no such member but one spelled another way (see names.go).
func (o *Object) Get(name string) (m Member, ok bool, err error) {
	if m, ok := o.members[name]; ok {
		return m, true, nil
	}
	// Names are unique under folding, so only a miss can hide a variant.
	for n := range o.members {
		if sameName(n, name) {
			return Member{}, false, fmt.Errorf("%w: %q", ErrVariant, name)
		}
	}
	return Member{}, false, nil
}

// String returns the decoded value of the string member called name. ok is
// false when the member is absent or null; err is set when it is present but
// not a string, or spelled another way (ErrVariant).
func (o *Object) String(name string) (s string, ok bool, err error) {
	m, present, err := o.Get(name)
	if err != nil || !present || m.IsNull() {
		return "", false, err
	}
	if len(m.Value) == 0 || m.Value[0] != '"' {
		return "", false, fmt.Errorf("rawjson: member %q is not a string", name)
	}
	if err := json.Unmarshal(m.Value, &s); err != nil {
		return "", false, fmt.Errorf("rawjson: member %q is not a string", name)
	}
	return s, true, nil
}

// Scalar returns the text of the member called name when it is a string (its
// decoded value) or a number (its raw text, never reformatted: 100000.00
// stays "100000.00"). ok is false when the member is absent or null; err is
// set for any other kind of value, or a member spelled another way
// (ErrVariant).
func (o *Object) Scalar(name string) (s string, ok bool, err error) {
	m, present, err := o.Get(name)
	if err != nil || !present || m.IsNull() {
		return "", false, err
	}
	if c := m.Value[0]; c == '-' || (c >= '0' && c <= '9') {
		return string(m.Value), true, nil
	}
	return o.String(name)
}

// Object parses the member called name as a nested object. ok is false when
// the member is absent or null; err is set when it is present but not an
// object, or spelled another way (ErrVariant). Its member names were
// checked by the Parse of o.
func (o *Object) Object(name string) (obj *Object, ok bool, err error) {
	m, present, err := o.Get(name)
	if err != nil || !present || m.IsNull() {
		return nil, false, err
	}
	obj, err = parse(m.Value, false)
	if err != nil {
		return nil, false, fmt.Errorf("rawjson: member %q: %w", name, err)
	}
	return obj, true, nil
}

// Fingerprint returns the lowercase hex SHA-256 of the named members, in the
// order given, encoded as one JSON object whose values are in canonical form
// (see Canonical). Absent members are left out rather than written as null,
// so "absent" and "null" fingerprint differently. With no names, every
// member is included, in sorted name order.
//
// The encoding is unambiguous because each value is itself valid JSON and
// each name is JSON-quoted.
func (o *Object) Fingerprint(names ...string) (string, error) {
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(o.members))
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	if err := o.AppendMembers(&buf, names); err != nil {
		return "", err
	}
	buf.WriteByte('}')
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// AppendMembers writes the named members of o that are present, in the
// order given, as comma-separated "name":value pairs with each value in
// canonical form: the inside of a Fingerprint object, for callers that nest
// one object's members in another's. A name spelled another way in o is an
// error wrapping ErrVariant.
func (o *Object) AppendMembers(buf *bytes.Buffer, names []string) error {
	first := true
	for _, name := range names {
		m, ok, err := o.Get(name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		quoted, err := json.Marshal(name)
		if err != nil {
			return err
		}
		buf.Write(quoted)
		buf.WriteByte(':')
		if err := Canonical(buf, m.Value); err != nil {
			return err
		}
	}
	return nil
}

// Canonical appends to buf a canonical encoding of the JSON value raw:
// compact, object members sorted by name at every depth, string escapes
// normalised, and numbers kept as their exact text. Two values that differ
// only in white space, member order or escaping encode identically, so a
// provider that re-serialises the same event on a retry fingerprints the
// same.
func Canonical(buf *bytes.Buffer, raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	// encoding/json writes map keys in sorted order and json.Number as is.
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(out)
	return nil
}
