package rawjson

import (
	"encoding/binary"
	"math/bits"
)

// Parse reads a body once: a scanner that validates its syntax as
// encoding/json does, frames the top-level members and collects the names
// of every object for the check of names.go, all in the same pass. It
// replaced a jsontext tokenizer followed by a second scan for the names,
// which read every byte twice (BENCHMARKS.md, "Parsing (rawjson)").
//
// What it accepts is exactly what encoding/json accepts, and what it frames
// and refuses exactly what the tokenizer did (FuzzParseDifferential,
// FuzzParseTokenizer, TestSyntaxAgreesWithTokenizer): RFC 8259 syntax,
// any byte from 0x20 up in strings (invalid UTF-8 and lone surrogate
// escapes are read as U+FFFD), white space only as space, tab, newline and
// carriage return, and at most maxDepth nested objects and arrays, the
// body's own object included. A body that is not JSON is ErrNotObject
// even when an object in it names a member twice.

// maxDepth is encoding/json's nesting limit (and jsontext's).
const maxDepth = 10000

// level is an object or array that the scanner has not closed yet.
type level struct {
	first  int  // an object's: where its names start in the scanner's list
	ascii  bool // an object's: all its names so far are plain ASCII (foldHash's ok)
	object bool
	empty  bool // nothing read in it yet: its end may come next
}

// parse validates body, frames its top-level members and checks the names
// of every object in one pass. It is one function, its state in local
// variables, so that the buffers below stay on its stack: a body whose
// objects nest and hold few enough members to fit them costs no
// allocation but the Object.
func parse(body []byte) (*Object, error) {
	var namesBuf [64]name
	var openBuf [16]level
	var membersBuf [32]entry
	names := namesBuf[:0]     // the names of the open objects
	open := openBuf[:0]       // the open objects and arrays, the body's first
	members := membersBuf[:0] // the body's members
	// dup is set once an object has two names equal under foldKey: the
	// rest is still validated, so that a body that is not JSON is
	// ErrNotObject whatever names it holds, as before.
	dup := false
	var e entry // the body's member being read
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, ErrNotObject
	}
	open = append(open, level{object: true, ascii: true, empty: true})
	first := i + 1 // Object.Open
	i = first
	for len(open) > 0 {
		// At the start of a container's contents, or after a comma: a
		// value (in an object, its name first), or the container's end.
		if i = skipWS(body, i); i >= len(body) {
			return nil, ErrNotObject
		}
		top := &open[len(open)-1]
		closing := top.empty && body[i] == closer(top.object)
		top.empty = false
		if !closing {
			if top.object {
				start, end, next := memberName(body, i)
				if next < 0 {
					return nil, ErrNotObject
				}
				if !dup {
					n := name{raw: body[start:end]}
					var ascii bool
					n.key, ascii = foldHash(n.raw)
					top.ascii = top.ascii && ascii
					names = append(names, n)
				}
				if len(open) == 1 {
					e = entry{nameStart: start, nameEnd: end}
				}
				if i = next; i >= len(body) {
					return nil, ErrNotObject
				}
			}
			if len(open) == 1 {
				e.start = i
			}
			if c := body[i]; c == '{' || c == '[' {
				if len(open) == maxDepth {
					return nil, ErrNotObject
				}
				open = append(open, level{first: len(names), ascii: true, object: c == '{', empty: true})
				i++
				continue // its contents are next
			}
			if i = scalar(body, i); i < 0 {
				return nil, ErrNotObject
			}
			if len(open) == 1 {
				e.end = i
				members = append(members, e)
			}
		}
		// After a value of the innermost container: a comma, or the
		// container's end, after which the container was a value of the
		// one around it.
		for {
			if closing {
				obj := open[len(open)-1]
				open = open[:len(open)-1]
				if obj.object {
					if !dup && hasVariants(names[obj.first:], obj.ascii) {
						dup = true
					}
					names = names[:obj.first]
				}
				i++
				if len(open) == 0 {
					break // the body's object
				}
				if len(open) == 1 {
					e.end = i
					members = append(members, e)
				}
			}
			if i = skipWS(body, i); i >= len(body) {
				return nil, ErrNotObject
			}
			if body[i] == ',' {
				i++
				break
			}
			if body[i] != closer(open[len(open)-1].object) {
				return nil, ErrNotObject
			}
			closing = true
		}
	}
	if skipWS(body, i) != len(body) {
		return nil, ErrNotObject
	}
	if dup {
		return nil, ErrDuplicate
	}
	return newObject(body, first, members), nil
}

// closer is the byte that closes an object or an array.
func closer(object bool) byte {
	if object {
		return '}'
	}
	return ']'
}

// memberName reads the member name at i, its colon and the white space after
// it: the name's raw text is body[start:end], and its value starts at
// next, which is -1 when the syntax is wrong.
func memberName(body []byte, i int) (start, end, next int) {
	if body[i] != '"' {
		return 0, 0, -1
	}
	start = i + 1
	if end = validString(body, start); end < 0 {
		return 0, 0, -1
	}
	i = skipWS(body, end+1)
	if i >= len(body) || body[i] != ':' {
		return 0, 0, -1
	}
	return start, end, skipWS(body, i+1)
}

// scalar returns the offset after the string, number or literal at i, or
// -1 when there is none.
func scalar(body []byte, i int) int {
	switch body[i] {
	case '"':
		if end := validString(body, i+1); end >= 0 {
			return end + 1
		}
		return -1
	case 't':
		return literal(body, i, "true")
	case 'f':
		return literal(body, i, "false")
	case 'n':
		return literal(body, i, "null")
	default:
		return number(body, i)
	}
}

// skipWS returns the offset of the first byte at or after i that is not
// JSON white space, or len(body). The indentation after a newline, most
// of the white space of a body as providers send it, is skipped a word at
// a time: the spaces that start a word are its low zero bytes once each
// is XORed with a space.
func skipWS(body []byte, i int) int {
	for i < len(body) {
		switch body[i] {
		case ' ', '\t', '\r':
			i++
		case '\n':
			i++
			for i+8 <= len(body) {
				n := bits.TrailingZeros64(binary.LittleEndian.Uint64(body[i:])^' '*ones) / 8
				if i += n; n < 8 {
					break
				}
			}
		default:
			return i
		}
	}
	return i
}

// literal returns the offset after the literal lit at body[i:], or -1.
func literal(body []byte, i int, lit string) int {
	if len(body)-i < len(lit) || string(body[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// number returns the offset after the JSON number at body[i:], or -1: an
// optional minus, an integer part without leading zeros, an optional
// fraction and an optional exponent. What follows is the caller's to
// check (a digit after "0" is then refused as a missing comma is).
func number(body []byte, i int) int {
	if i < len(body) && body[i] == '-' {
		i++
	}
	switch {
	case i >= len(body):
		return -1
	case body[i] == '0':
		i++
	case '1' <= body[i] && body[i] <= '9':
		i = digits(body, i+1)
	default:
		return -1
	}
	if i < len(body) && body[i] == '.' {
		if i = digits(body, i+1); body[i-1] == '.' {
			return -1
		}
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		i++
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			i++
		}
		start := i
		if i = digits(body, i); i == start {
			return -1
		}
	}
	return i
}

// digits returns the offset of the first byte at or after i that is not a
// decimal digit, or len(body).
func digits(body []byte, i int) int {
	for i < len(body) && '0' <= body[i] && body[i] <= '9' {
		i++
	}
	return i
}

// controls is the byte 0x20 in every byte of a word: a byte below it,
// minus it, borrows into its high bit.
const controls = 0x20 * ones

// validString returns the offset of the quote that closes the string
// whose content starts at i, or -1 when the body ends first or the string
// holds a control character or an escape encoding/json refuses.
func validString(body []byte, i int) int {
	for {
		for i+8 <= len(body) {
			w := binary.LittleEndian.Uint64(body[i:])
			m := zeroBytes(w^quotes) | zeroBytes(w^backslashes) | (w-controls)&^w&highs
			if m != 0 {
				i += firstMarked(m)
				break
			}
			i += 8
		}
		for i < len(body) && body[i] >= ' ' && body[i] != '"' && body[i] != '\\' {
			i++
		}
		switch {
		case i >= len(body) || body[i] < ' ':
			return -1
		case body[i] == '"':
			return i
		}
		if i = escape(body, i); i < 0 {
			return -1
		}
	}
}

// escape returns the offset after the escape sequence at body[i] (a
// backslash), or -1 when it is not one of JSON's.
func escape(body []byte, i int) int {
	if i+1 >= len(body) {
		return -1
	}
	switch body[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2
	case 'u':
		if hex4(body, i+2) < 0 {
			return -1
		}
		return i + 6
	}
	return -1
}
