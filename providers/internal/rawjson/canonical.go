package rawjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonical appends to buf a canonical encoding of the JSON value raw:
// compact, object members sorted by name at every depth, string escapes
// normalised, and numbers kept as their exact text. Two values that differ
// only in white space, member order or escaping encode identically, so a
// provider that re-serialises the same event on a retry fingerprints the
// same.
//
// The encoding is, byte for byte, what encoding/json's Marshal writes for
// the value decoded into interface values with UseNumber (stored
// fingerprints depend on it; canonicalSlow does exactly that, and
// FuzzCanonical holds the two together). The usual value is written
// straight from raw without decoding it.
func Canonical(buf *bytes.Buffer, raw json.RawMessage) error {
	if jsontext.Value(raw).IsValid() {
		return canonical(buf, raw)
	}
	return canonicalSlow(buf, raw)
}

// canonical is Canonical for a value taken from a parsed body, which is
// known to be valid JSON with unique names.
func canonical(buf *bytes.Buffer, raw []byte) error {
	// Room for the encoding and for the copy appendObject makes of an
	// object's members while it orders them: appendCanonical then writes
	// in place, and a reused buffer does not have to grow again.
	buf.Grow(2 * len(raw))
	if out, ok := appendCanonical(buf.AvailableBuffer(), raw); ok {
		buf.Write(out)
		return nil
	}
	return canonicalSlow(buf, raw)
}

// canonicalSlow is Canonical by way of encoding/json: a decode into
// interface values, then Marshal, which writes map keys in sorted order
// and json.Number as it is.
func canonicalSlow(buf *bytes.Buffer, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(out)
	return nil
}

// appendCanonical appends the canonical encoding of raw, one valid JSON
// value without surrounding white space, to dst. ok is false when raw holds
// what it leaves to canonicalSlow: an object with a name that is not plain
// (escapes, invalid UTF-8 or characters Marshal escapes) or named twice, or
// objects and arrays nested deeper than maxFastDepth.
func appendCanonical(dst, raw []byte) (out []byte, ok bool) {
	end, out, ok := appendValue(dst, raw, 0, 0)
	return out, ok && end == len(raw)
}

// maxFastDepth is how deep appendValue nests objects and arrays before it
// leaves the value to canonicalSlow. appendObject moves the pairs of an
// object it reorders, nested values included, so its cost grows with the
// depth times the size: a body nested thousands deep, which anyone holding
// one genuine delivery of a provider that signs only some fields can send,
// would otherwise cost seconds. Provider objects nest a few levels.
const maxFastDepth = 32

// appendValue appends the canonical encoding of the valid JSON value at
// raw[i:], depth objects and arrays deep, to dst and returns the offset
// after the value.
func appendValue(dst, raw []byte, i, depth int) (end int, out []byte, ok bool) {
	if i >= len(raw) {
		return i, dst, false
	}
	if (raw[i] == '{' || raw[i] == '[') && depth == maxFastDepth {
		return i, dst, false
	}
	switch raw[i] {
	case '{':
		return appendObject(dst, raw, i, depth+1)
	case '[':
		dst = append(dst, '[')
		i = skipSpace(raw, i+1)
		if i < len(raw) && raw[i] == ']' {
			return i + 1, append(dst, ']'), true
		}
		for {
			if i, dst, ok = appendValue(dst, raw, i, depth+1); !ok {
				return i, dst, false
			}
			i = skipSpace(raw, i)
			if i >= len(raw) {
				return i, dst, false
			}
			if raw[i] == ']' {
				return i + 1, append(dst, ']'), true
			}
			dst = append(dst, ',')
			i = skipSpace(raw, i+1) // past the comma
		}
	case '"':
		end := stringEnd(raw, i+1) + 1
		if end > len(raw) {
			return end, dst, false
		}
		out, ok := appendString(dst, raw[i:end])
		return end, out, ok
	default: // a number or a literal: kept as its exact text
		end := i
		for end < len(raw) && !isDelim(raw[end]) {
			end++
		}
		return end, append(dst, raw[i:end]...), true
	}
}

// member is one member of an object being made canonical: its name, and
// where its "name":value pair is in the output.
type member struct {
	// key is the name's first eight bytes, big-endian, zero-padded: keys
	// order as the names do but for names that share those bytes, and a
	// plain name has no zero byte (isCanonicalString), so a shorter name
	// sorts before a longer one it starts.
	key        uint64
	name       []byte
	start, end int
}

// compareMembers orders members bytewise by name.
func compareMembers(a, b member) int {
	if a.key != b.key {
		if a.key < b.key {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.name, b.name)
}

// nameKey is member.key for name.
func nameKey(name []byte) uint64 {
	if len(name) >= 8 {
		return binary.BigEndian.Uint64(name)
	}
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(name) {
			k |= uint64(name[i])
		}
	}
	return k
}

// appendObject writes each member's pair in body order, as it reads it,
// then puts the pairs in order of name: moving bytes already written costs
// far less than finding each value's end first, which read every nested
// value once more per level of nesting.
func appendObject(dst, raw []byte, i, depth int) (end int, out []byte, ok bool) {
	var buf [32]member // provider objects fit: no allocation
	members := buf[:0]
	dst = append(dst, '{')
	first := len(dst) // where the pairs start
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		nameEnd := stringEnd(raw, i+1)
		name := raw[i+1 : nameEnd]
		if !isCanonicalString(name) {
			return i, dst, false
		}
		i = skipSpace(raw, nameEnd+1) + 1 // past the colon
		i = skipSpace(raw, i)
		if len(members) > 0 {
			// The commas take the same room whatever the order.
			dst = append(dst, ',')
		}
		m := member{key: nameKey(name), name: name, start: len(dst)}
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
		if i, dst, ok = appendValue(dst, raw, i, depth); !ok {
			return i, dst, false
		}
		m.end = len(dst)
		members = append(members, m)
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if i >= len(raw) || raw[i] != '}' {
		return i, dst, false
	}
	// Plain names sort as their decoded strings do: bytewise, as Marshal
	// sorts map keys.
	if !slices.IsSortedFunc(members, compareMembers) {
		slices.SortFunc(members, compareMembers)
		// Copy the pairs past the end, then back in order: they take the
		// room they took, so the copy is not written over.
		pairs := len(dst) - first
		dst = append(dst, dst[first:]...)
		written := dst[len(dst)-pairs:]
		dst = dst[:first]
		for k, m := range members {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, written[m.start-first:m.end-first]...)
		}
	}
	for k := 1; k < len(members); k++ {
		if bytes.Equal(members[k-1].name, members[k].name) {
			return i, dst, false // a map would keep only the last
		}
	}
	return i + 1, append(dst, '}'), true
}

// appendString appends the canonical encoding of the valid JSON string
// quoted: itself when Marshal would write its value back unchanged, else
// what Marshal writes for its decoded value.
func appendString(dst, quoted []byte) ([]byte, bool) {
	if isCanonicalString(quoted[1 : len(quoted)-1]) {
		return append(dst, quoted...), true
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return dst, false
	}
	out, err := json.Marshal(s)
	if err != nil {
		return dst, false
	}
	return append(dst, out...), true
}

// isCanonicalString reports whether the raw text of a JSON string is what
// Marshal writes for its value: no escapes, valid UTF-8, and none of the
// characters Marshal escapes (control characters, '<', '>', '&', U+2028
// and U+2029).
func isCanonicalString[T text](raw T) bool {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c < utf8.RuneSelf {
			if c < ' ' || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
			i++
			continue
		}
		r, n := decodeRune(raw[i:])
		if (r == utf8.RuneError && n == 1) || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += n
	}
	return true
}

// skipValue returns the offset after the valid JSON value at raw[i:], or
// -1 if raw ends first.
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		if end := stringEnd(raw, i+1); end < len(raw) {
			return end + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for i = nextStructural(raw, i); i < len(raw); i = nextStructural(raw, i+1) {
			switch raw[i] {
			case '"':
				i = stringEnd(raw, i+1)
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default: // a number or a literal
		for ; i < len(raw) && !isDelim(raw[i]); i++ {
		}
		return i
	}
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isDelim reports whether c ends a number or a literal.
func isDelim(c byte) bool { return isSpace(c) || c == ',' || c == '}' || c == ']' || c == ':' }
