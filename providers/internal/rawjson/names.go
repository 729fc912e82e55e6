package rawjson

import (
	"slices"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Member names are compared the way the most lenient common decoders match
// them, so that no decoder can take two members of one object for one name,
// nor a name webhookd looks up for a member spelled another way:
//
//   - after unescaping ("\u0073" is "s"), with invalid UTF-8 and lone
//     surrogate escapes read as U+FFFD, as encoding/json reads them;
//   - case-insensitively with Unicode simple folding, as encoding/json
//     matches struct fields (bytes.EqualFold: "ſ" U+017F is "s", the Kelvin
//     sign U+212A is "k"), and also with the simple upper- and lower-case
//     mappings, as Java's equalsIgnoreCase, .NET's OrdinalIgnoreCase and
//     lower-casing decoders compare (dotless "ı" and dotted "İ" are "i").
//
// "_" and "-" count: encoding/json/v2's opt-in case:ignore matching skips
// them, but a merchant's own metadata (Stripe metadata, Xendit metadata)
// may well hold both "order_id" and "orderId", and a genuine event refused
// with 400 is an event lost once the provider stops retrying. Provider
// payloads never spell one name in two cases, so refusing those loses
// nothing genuine.

// checkNames reports whether any object in body, at any depth, has two
// member names that are equal under foldKey. body must be valid JSON.
//
// It needs no allocation for bodies whose objects nest and hold few enough
// members to fit the stack buffers below, whatever the names.
func checkNames(body []byte) error {
	var namesBuf [64]name
	var openBuf [16]openObject
	names := namesBuf[:0] // the names of the open objects
	open := openBuf[:0]
	for i := nextStructural(body, 0); i < len(body); i = nextStructural(body, i+1) {
		switch body[i] {
		case '{':
			open = append(open, openObject{first: len(names), ascii: true})
		case '}':
			if len(open) == 0 {
				return ErrNotObject // not valid JSON after all
			}
			obj := open[len(open)-1]
			open = open[:len(open)-1]
			if hasVariants(names[obj.first:], obj.ascii) {
				return ErrDuplicate
			}
			names = names[:obj.first]
		case '"':
			start, end := i+1, stringEnd(body, i+1)
			i = end
			// In valid JSON a string followed by a colon is a member name.
			if colon := nameColon(body, end+1); colon >= 0 && len(open) > 0 {
				n := name{raw: body[start:end]}
				var ascii bool
				n.key, ascii = foldHash(n.raw)
				open[len(open)-1].ascii = open[len(open)-1].ascii && ascii
				names = append(names, n)
				i = colon // the value starts after it: often at once
			}
		}
	}
	return nil
}

// name is a member name of an object that checkNames has not closed yet.
type name struct {
	raw []byte // the raw (still escaped) text between the quotes
	// key is foldHash of raw: equal for two plain ASCII names that are
	// equal under foldKey.
	key uint64
}

// openObject is an object that checkNames has not closed yet.
type openObject struct {
	first int  // where its names start in checkNames's list
	ascii bool // all its names so far are plain ASCII (foldHash's ok)
}

// nameColon returns the offset of the colon when the first byte at or
// after i that is not white space is one, else -1.
func nameColon(body []byte, i int) int {
	for ; i < len(body); i++ {
		switch body[i] {
		case ' ', '\t', '\n', '\r':
		case ':':
			return i
		default:
			return -1
		}
	}
	return -1
}

// hasVariants reports whether two of the names of one object are equal
// under foldKey. ascii says that all of them are plain ASCII, with their
// keys set. It may reorder names.
func hasVariants(names []name, ascii bool) bool {
	if len(names) < 2 {
		return false
	}
	if !ascii {
		slices.SortFunc(names, func(a, b name) int { return compareRaw(a.raw, b.raw) })
		for i := 1; i < len(names); i++ {
			if compareRaw(names[i-1].raw, names[i].raw) == 0 {
				return true
			}
		}
		return false
	}
	// Nearly every object a provider sends: no escape, no byte outside
	// ASCII. Names equal under foldKey have equal keys, so only names
	// with equal keys (nearly always variants, else a rare collision) need
	// comparing byte by byte, and a small hash table finds them.
	if len(names) == 2 {
		return names[0].key == names[1].key && compareASCII(names[0].raw, names[1].raw) == 0
	}
	if variant, settled := probeVariants(names); settled {
		return variant
	}
	// Sort by key, then by compareASCII: variants sort together even among
	// colliding keys.
	slices.SortFunc(names, compareKeys)
	for i := 1; i < len(names); i++ {
		if compareKeys(names[i-1], names[i]) == 0 {
			return true
		}
	}
	return false
}

// probeVariants is hasVariants for plain ASCII names by way of a small
// hash table of their keys. settled is false when there are too many names
// for the table, or when they collide so much (as names chosen to collide
// would: the keys are no secret) that sorting them costs less; a table
// that does not give up would cost as many comparisons as pairs of names.
func probeVariants(names []name) (variant, settled bool) {
	var table [128]uint8 // index+1 of a name; 0 is a free slot
	if len(names) > len(table)/2 {
		return false, false
	}
	probes := 0
	for i := range names {
		slot := names[i].key >> 57 // the table's size: 7 bits
		for table[slot] != 0 {
			if o := &names[table[slot]-1]; o.key == names[i].key && compareASCII(o.raw, names[i].raw) == 0 {
				return true, true
			}
			if probes++; probes > 2*len(names) {
				return false, false
			}
			slot = (slot + 1) % uint64(len(table))
		}
		table[slot] = uint8(i + 1)
	}
	return false, true
}

// compareKeys orders plain ASCII names by key, then by compareASCII: it
// returns 0 exactly when compareASCII does, since equal names have equal
// keys.
func compareKeys(a, b name) int {
	if a.key != b.key {
		if a.key < b.key {
			return -1
		}
		return 1
	}
	return compareASCII(a.raw, b.raw)
}

// compareASCII orders plain ASCII names by length, then by their bytes
// under foldKey; it returns 0 exactly when compareRaw does for such names
// (TestCompareASCIIAgreesWithCompareRaw), though its order differs, which
// hasVariants does not mind: it only needs equal names to sort together.
func compareASCII(a, b []byte) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	for i := range a {
		ka, kb := upperASCII(a[i]), upperASCII(b[i])
		if ka != kb {
			return int(ka) - int(kb)
		}
	}
	return 0
}

// upperASCII is foldKey for an ASCII byte.
func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// text is a name: raw bytes of the body or a decoded string.
type text interface{ ~string | ~[]byte }

func compareRaw(a, b []byte) int { return compareNames(a, true, b, true) }

// compareNames orders two names by their sequences of foldKey runes; it returns 0 exactly when a decoder that folds the way
// the package comment says could take one name for the other. A name is
// escaped when it is the raw text between the quotes of a JSON string, and
// decoded otherwise.
func compareNames[A, B text](a A, escA bool, b B, escB bool) int {
	i, j := 0, 0
	for {
		// The common case inline: plain ASCII on both sides, which is
		// exactly what nextKey returns for it.
		for i < len(a) && j < len(b) {
			ca, cb := a[i], b[j]
			if ca >= utf8.RuneSelf || cb >= utf8.RuneSelf || (escA && ca == '\\') || (escB && cb == '\\') {
				break
			}
			if 'a' <= ca && ca <= 'z' {
				ca -= 'a' - 'A'
			}
			if 'a' <= cb && cb <= 'z' {
				cb -= 'a' - 'A'
			}
			if ca != cb {
				if ca < cb {
					return -1
				}
				return 1
			}
			i++
			j++
		}
		ka, ni, okA := nextKey(a, i, escA)
		kb, nj, okB := nextKey(b, j, escB)
		switch {
		case !okA && !okB:
			return 0
		case !okA:
			return -1
		case !okB:
			return 1
		case ka != kb:
			if ka < kb {
				return -1
			}
			return 1
		}
		i, j = ni, nj
	}
}

// nextKey returns the foldKey of the rune at i in s and the offset after
// it; ok is false at the end of s.
func nextKey[T text](s T, i int, escaped bool) (k rune, next int, ok bool) {
	for i < len(s) {
		c := s[i]
		// The common case: a plain ASCII byte.
		if c < utf8.RuneSelf && (c != '\\' || !escaped) {
			i++
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			return rune(c), i, true
		}
		var r rune
		if escaped && c == '\\' {
			r, i = unescape(s, i)
		} else {
			var n int
			r, n = decodeRune(s[i:]) // invalid UTF-8 is U+FFFD, size 1
			i += n
		}
		return foldKey(r), i, true
	}
	return 0, i, false
}

// unescape decodes the escape sequence at s[i] (a backslash) of a valid
// JSON string as encoding/json does, and returns the rune and the offset
// after the sequence.
func unescape[T text](s T, i int) (rune, int) {
	if i+1 >= len(s) {
		return utf8.RuneError, len(s)
	}
	switch s[i+1] {
	case 'u':
		r := hex4(s, i+2)
		if r < 0 {
			return utf8.RuneError, len(s)
		}
		i += 6
		if !utf16.IsSurrogate(r) {
			return r, i
		}
		// A surrogate pair is one rune; a lone surrogate is U+FFFD, and the
		// escape after it is read on its own.
		if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
			if r2 := hex4(s, i+2); r2 >= 0 {
				if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
					return dec, i + 6
				}
			}
		}
		return unicode.ReplacementChar, i
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	default: // '"', '\\', '/'
		return rune(s[i+1]), i + 2
	}
}

// hex4 decodes the four hex digits at s[i:], or returns -1.
func hex4[T text](s T, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := s[k]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

func decodeRune[T text](s T) (rune, int) {
	switch s := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(s)
	case []byte:
		return utf8.DecodeRune(s)
	}
	return utf8.DecodeRuneInString(string(s))
}

// foldKey returns one rune for every rune that a case-insensitive decoder
// could take for r: the smallest rune of the simple case folding orbit
// (unicode.SimpleFold) of r's simple upper case of its simple lower case.
// For ASCII it is the upper-case letter, as in encoding/json's foldName.
// TestFoldKeyCoversOrbits checks every rune.
func foldKey(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	r = unicode.ToUpper(unicode.ToLower(r))
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next
		}
		r = next
	}
}
