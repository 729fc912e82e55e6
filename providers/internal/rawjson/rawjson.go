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
	"iter"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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
	// ErrNotArray means a member read as an array (Elements) is not one.
	ErrNotArray = errors.New("rawjson: not a JSON array")
)

// Member is one top-level member of a parsed object.
type Member struct {
	// Value is the member's value exactly as it appears in the body
	// (Value == body[Start:End]), without surrounding white space. It is
	// that slice of the body, not a copy (its capacity ends with it, so
	// appending to it cannot write into the body): the body must not change
	// while the Object or its members are in use.
	Value json.RawMessage
	// Start and End are Value's offsets in the parsed body.
	Start, End int
	// parsed is Value as Parse framed it, so that Object can tell a value
	// of a parsed body (valid, its names checked) from a Member made or
	// changed by hand, which it must validate.
	parsed []byte
}

// IsNull reports whether the member's value is the JSON literal null.
func (m Member) IsNull() bool { return string(m.Value) == "null" }

// Object reads m's value as an object, as Object.Object reads a member:
// without validating it again when m is as an Object or Elements returned
// it, else as Parse does. A value that is not an object is ErrNotObject.
func (m Member) Object() (*Object, error) {
	if len(m.Value) > 0 && len(m.Value) == len(m.parsed) && &m.Value[0] == &m.parsed[0] {
		return frame(m.Value)
	}
	return Parse(m.Value)
}

// Object is a parsed JSON object: its top-level members in body order.
//
// Members are kept in a slice, not a map: webhook objects hold a few dozen
// members at most and adapters look up a handful, so a linear scan over
// names that are slices of the body costs less than hashing every name into
// a map of freshly allocated strings.
type Object struct {
	body    []byte
	members []entry
	// decoded holds the names that are not plain, decoded (see entry).
	decoded []string
	// open is the offset just past the object's opening brace.
	open int
}

// entry is one member: where its name and value are in the body. It holds
// no pointer, so that the members of an Object cost the garbage collector
// nothing to scan.
type entry struct {
	// nameStart and nameEnd frame the name's raw text between its quotes.
	nameStart, nameEnd int
	start, end         int // the value's offsets
	// decoded is 0 when the raw text is the name as it is (plain), else 1
	// plus the index in Object.decoded of the name unescaped, with invalid
	// UTF-8 as U+FFFD, as encoding/json reads it: escapes and invalid UTF-8
	// are rare, so the common name costs no allocation.
	decoded int
}

// decoderOptions configure the tokenizer as lenient as encoding/json in
// what it accepts, and no more: invalid UTF-8 and lone surrogate escapes
// in strings are read as U+FFFD (encoding/json accepts them, and names.go
// compares names that way), and duplicate names are left to checkNames,
// which refuses every exact duplicate and more. Everything else (syntax,
// the 10000 nesting limit, trailing data) is as strict as encoding/json.
var decoderOptions = []jsontext.Options{
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
}

// tokenizer is a reusable jsontext.Decoder reading straight from a body:
// given a *bytes.Buffer, jsontext parses the buffer's bytes in place, so
// every value it returns is a slice of the body and nothing is copied.
type tokenizer struct {
	dec jsontext.Decoder
	src bytes.Buffer
}

// tokenizers pools decoders, whose state (a stack of nesting levels) is
// worth keeping across the many parses of a busy receiver.
var tokenizers = sync.Pool{New: func() any { return new(tokenizer) }}

// Parse reads body as exactly one JSON object (white space around it is
// allowed) and returns its top-level members, which refer to body. Nested values are validated,
// and their member names checked, but not split further; use Object.Object
// to read a nested object.
func Parse(body []byte) (*Object, error) {
	o, err := tokenize(body)
	if err != nil {
		return nil, err
	}
	if err := checkNames(body); err != nil {
		return nil, err
	}
	return o, nil
}

// tokenize frames body's members with a pooled tokenizer, which validates
// body.
func tokenize(body []byte) (*Object, error) {
	t := tokenizers.Get().(*tokenizer)
	o, err := t.object(body)
	// Drop the body before pooling: a pooled decoder must not pin it.
	t.src = bytes.Buffer{}
	t.dec.Reset(&t.src, decoderOptions...)
	tokenizers.Put(t)
	return o, err
}

// object tokenizes body in one pass: the opening brace, each member's name
// and value as raw slices of body, the closing brace, then end of input.
func (t *tokenizer) object(body []byte) (*Object, error) {
	t.src = *bytes.NewBuffer(body)
	t.dec.Reset(&t.src, decoderOptions...)
	if tok, err := t.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, ErrNotObject
	}
	open := int(t.dec.InputOffset())
	var buf [32]entry // most objects fit: one allocation for the members
	members := buf[:0]
	for t.dec.PeekKind() == '"' {
		name, err := t.dec.ReadValue()
		if err != nil {
			return nil, ErrNotObject
		}
		nameEnd := int(t.dec.InputOffset()) - 1
		e := entry{nameStart: nameEnd - (len(name) - 2), nameEnd: nameEnd}
		value, err := t.dec.ReadValue()
		if err != nil {
			return nil, ErrNotObject
		}
		e.end = int(t.dec.InputOffset())
		e.start = e.end - len(value)
		members = append(members, e)
	}
	if tok, err := t.dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return nil, ErrNotObject
	}
	if _, err := t.dec.ReadToken(); err != io.EOF {
		return nil, ErrNotObject
	}
	return newObject(body, open, members), nil
}

// frame frames the members of body, an object that is a nested value of a
// parsed body, as the tokenizer would (FuzzFrame, TestFrameFixtures), but
// without validating it again: a scan for the next quote, bracket or brace
// costs a fraction of jsontext's checks of every byte. body is a Member's
// Value: no white space around it. Not an object is ErrNotObject.
func frame(body []byte) (*Object, error) {
	if len(body) == 0 || body[0] != '{' {
		return nil, ErrNotObject
	}
	var buf [32]entry
	members := buf[:0]
	i := skipSpace(body, 1)
	for i < len(body) && body[i] == '"' {
		e := entry{nameStart: i + 1, nameEnd: stringEnd(body, i+1)}
		i = skipSpace(body, e.nameEnd+1)
		if i >= len(body) || body[i] != ':' {
			return nil, ErrNotObject
		}
		e.start = skipSpace(body, i+1)
		if e.end = skipValue(body, e.start); e.end < 0 {
			return nil, ErrNotObject
		}
		members = append(members, e)
		if i = skipSpace(body, e.end); i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	if i != len(body)-1 || body[i] != '}' {
		return nil, ErrNotObject
	}
	return newObject(body, 1, members), nil
}

// newObject returns the Object of body with the framed members, which it
// copies, and decodes the names that are not plain.
func newObject(body []byte, open int, members []entry) *Object {
	o := &Object{body: body, open: open, members: slices.Clone(members)}
	for i := range o.members {
		e := &o.members[i]
		if raw := body[e.nameStart:e.nameEnd]; !isPlain(raw) {
			o.decoded = append(o.decoded, unquote(raw))
			e.decoded = len(o.decoded)
		}
	}
	return o
}

// isPlain reports whether the raw text of a valid JSON string is its value
// as it is: no escapes and valid UTF-8.
func isPlain(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			return bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw)
		}
	}
	return true
}

// unquote decodes the raw text of a valid JSON string the way encoding/json
// does: escapes resolved, invalid UTF-8 and lone surrogates as U+FFFD.
func unquote(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		var r rune
		if raw[i] == '\\' {
			r, i = unescape(raw, i)
		} else {
			var n int
			r, n = utf8.DecodeRune(raw[i:])
			i += n
		}
		b.WriteRune(r)
	}
	return b.String()
}

// name returns e's name as a decoder reads it.
func (o *Object) name(e *entry) string {
	if e.decoded == 0 {
		return string(o.body[e.nameStart:e.nameEnd])
	}
	return o.decoded[e.decoded-1]
}

// is reports whether e's name is exactly name.
func (o *Object) is(e *entry, name string) bool {
	if e.decoded == 0 {
		return string(o.body[e.nameStart:e.nameEnd]) == name
	}
	return o.decoded[e.decoded-1] == name
}

func (o *Object) member(e *entry) Member {
	v := o.body[e.start:e.end:e.end]
	return Member{Value: v, Start: e.start, End: e.end, parsed: v}
}

// AppendCompact appends m's value to buf without insignificant white
// space: what json.Compact writes for it, without json.Compact's
// byte-by-byte state machine, since Parse has validated the value already.
// m must come from a parsed Object.
func (m Member) AppendCompact(buf *bytes.Buffer) {
	buf.Grow(len(m.Value))
	buf.Write(appendCompact(buf.AvailableBuffer(), m.Value))
}

// Len is the number of members.
func (o *Object) Len() int { return len(o.members) }

// Open is the offset in the body just past the object's opening brace, where
// a new first member can be inserted.
func (o *Object) Open() int { return o.open }

// Get returns the member called name. err wraps ErrVariant when there is
// no such member but one spelled another way (see names.go).
func (o *Object) Get(name string) (m Member, ok bool, err error) {
	for i := range o.members {
		if e := &o.members[i]; o.is(e, name) {
			return o.member(e), true, nil
		}
	}
	// Names are unique under folding, so only a miss can hide a variant.
	for i := range o.members {
		e := &o.members[i]
		raw := o.body[e.nameStart:e.nameEnd]
		if differFirst(raw, name) {
			continue // most names: no need to compare further
		}
		if compareNames(raw, true, name, false) == 0 {
			return Member{}, false, fmt.Errorf("%w: %q", ErrVariant, name)
		}
	}
	return Member{}, false, nil
}

// differFirst reports whether the raw name and the decoded name start with
// plain ASCII bytes that differ under foldKey, which settles that the names
// are not equal under it: compareNames would stop there.
func differFirst(raw []byte, name string) bool {
	if len(raw) == 0 || len(name) == 0 {
		return false
	}
	a, b := raw[0], name[0]
	return a < utf8.RuneSelf && a != '\\' && b < utf8.RuneSelf && upperASCII(a) != upperASCII(b)
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
	// The value is a valid JSON string: without escapes or invalid UTF-8
	// its text between the quotes is its value.
	if raw := m.Value[1 : len(m.Value)-1]; isPlain(raw) {
		return string(raw), true, nil
	}
	var decoded string // not s: &s would move every result to the heap
	if err := json.Unmarshal(m.Value, &decoded); err != nil {
		return "", false, fmt.Errorf("rawjson: member %q is not a string", name)
	}
	return decoded, true, nil
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
	obj, err = frame(m.Value) // a value of a parsed body: see frame
	if err != nil {
		return nil, false, fmt.Errorf("rawjson: member %q: %w", name, err)
	}
	return obj, true, nil
}

// Elements returns the elements of the array member called name, in
// order, as an iterator of their indexes and Members whose Start and End
// are offsets in the same body as the array's (o's). Like Object, it frames
// a value of a parsed body without validating it again; and it frames one
// element at a time, so a caller that stops early (at a limit on their
// number) does no work and allocates nothing for the rest. ok is false
// when the member is absent or null; err wraps ErrNotArray when it is
// present but not an array, and ErrVariant when it is spelled another way.
func (o *Object) Elements(name string) (elems iter.Seq2[int, Member], ok bool, err error) {
	m, present, err := o.Get(name)
	if err != nil || !present || m.IsNull() {
		return nil, false, err
	}
	raw := m.Value
	if raw[0] != '[' {
		return nil, false, fmt.Errorf("rawjson: member %q: %w", name, ErrNotArray)
	}
	return func(yield func(int, Member) bool) {
		k := 0
		for i := skipSpace(raw, 1); i < len(raw) && raw[i] != ']'; k++ {
			end := skipValue(raw, i)
			if end < 0 {
				return // not valid JSON, which a parsed body is
			}
			v := raw[i:end:end]
			if !yield(k, Member{Value: v, Start: m.Start + i, End: m.Start + end, parsed: v}) {
				return
			}
			if i = skipSpace(raw, end); i < len(raw) && raw[i] == ',' {
				i = skipSpace(raw, i+1)
			}
		}
	}, true, nil
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
		names = make([]string, len(o.members))
		for i := range o.members {
			names[i] = o.name(&o.members[i])
		}
		slices.Sort(names)
	}
	return HexSumOf(func(buf *bytes.Buffer) error {
		// Room for the members and for the copy canonical makes of a
		// value while it orders it: one growth, not two.
		buf.Grow(2 * len(o.body))
		buf.WriteByte('{')
		if err := o.AppendMembers(buf, names); err != nil {
			return err
		}
		buf.WriteByte('}')
		return nil
	})
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
		if err := appendName(buf, name); err != nil {
			return err
		}
		if err := canonical(buf, m.Value); err != nil {
			return err
		}
	}
	return nil
}

// appendName writes name quoted and a colon, as Marshal quotes it.
func appendName(buf *bytes.Buffer, name string) error {
	if isCanonicalString(name) {
		buf.WriteByte('"')
		buf.WriteString(name)
		buf.WriteString(`":`)
		return nil
	}
	quoted, err := json.Marshal(name)
	if err != nil {
		return err
	}
	buf.Write(quoted)
	buf.WriteByte(':')
	return nil
}

// HexSum returns the lowercase hex SHA-256 of b, as hex.EncodeToString of
// the sum does, in one allocation instead of two.
func HexSum(b []byte) string {
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// HexSumOf returns HexSum of what write writes to buf, an empty buffer
// reused across calls: a fingerprint's encoding is about as long as the
// body, and was allocated anew for every delivery. write must not keep buf.
func HexSumOf(write func(buf *bytes.Buffer) error) (string, error) {
	buf := scratch.Get().(*bytes.Buffer)
	buf.Reset()
	err := write(buf)
	var sum string
	if err == nil {
		sum = HexSum(buf.Bytes())
	}
	if buf.Cap() <= maxScratch {
		scratch.Put(buf)
	}
	return sum, err
}

// scratch pools HexSumOf's buffers.
var scratch = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxScratch is the largest buffer HexSumOf keeps for reuse: the buffer of
// a rare huge body is left to the garbage collector rather than held.
const maxScratch = 64 << 10
