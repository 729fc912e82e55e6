package rawjson

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
)

// The scans of a body look for a few bytes among many: quotes and braces
// between indentation and numbers, the closing quote of a short string.
// Reading eight bytes at a time and finding the first wanted one with
// arithmetic on the word ("SWAR") is faster there than a branch per byte,
// and than bytes.IndexByte, whose set-up costs more than the few bytes it
// searches (BenchmarkCheckNamesFixtures, BenchmarkAppendCompact). Only the
// lowest marked byte of a word is used: zeroBytes marks it exactly.

const (
	ones  = 0x0101010101010101 // the byte 0x01 in every byte of a word
	highs = 0x8080808080808080 // the high bit of every byte of a word

	quotes      = '"' * ones
	backslashes = '\\' * ones
)

// zeroBytes sets the high bit of the lowest zero byte of v, if any, and
// possibly of bytes above it (a borrow can mark a byte above a zero), never
// below it: the lowest marked byte is the lowest zero byte.
func zeroBytes(v uint64) uint64 { return (v - ones) &^ v & highs }

// firstMarked is the offset in its word of the lowest byte marked by
// zeroBytes.
func firstMarked(m uint64) int { return bits.TrailingZeros64(m) / 8 }

// nextStructural returns the offset of the first quote, brace or bracket
// at or after i, or len(body). In a word it may also stop at 'Y', '_',
// 'y' or DEL, which valid JSON holds only in strings, and which the
// callers, scanning between strings, pass over.
func nextStructural(body []byte, i int) int {
	// In compact JSON a string value comes right after its colon, where
	// checkNames starts: one byte is cheaper to look at than a word.
	if i < len(body) {
		switch body[i] {
		case '"', '{', '}', '[', ']':
			return i
		}
	}
	for ; i+8 <= len(body); i += 8 {
		w := binary.LittleEndian.Uint64(body[i:])
		// Of all bytes, only '{' (0x7b), '}' (0x7d), 'y' (0x79) and DEL
		// are 0x7f with the bits 0x06 set, and only '[' (0x5b), ']'
		// (0x5d), 'Y' (0x59) and '_' (0x5f) are 0x5f.
		w6 := w | 0x06*ones
		if m := zeroBytes(w^quotes) | zeroBytes(w6^(0x7f*ones)) | zeroBytes(w6^(0x5f*ones)); m != 0 {
			return i + firstMarked(m)
		}
	}
	for ; i < len(body); i++ {
		switch body[i] {
		case '"', '{', '}', '[', ']':
			return i
		}
	}
	return len(body)
}

// stringEnd returns the offset of the quote that closes the string whose
// content starts at i, or len(body) if the body ends first.
func stringEnd(body []byte, i int) int {
	// Most strings in a webhook are short: a word at a time first.
	for limit := min(i+64, len(body)); i+8 <= limit; {
		w := binary.LittleEndian.Uint64(body[i:])
		m := zeroBytes(w^quotes) | zeroBytes(w^backslashes)
		if m == 0 {
			i += 8
			continue
		}
		i += firstMarked(m)
		if body[i] == '"' {
			return i
		}
		i += 2 // past the backslash and the byte it escapes
	}
	for i < len(body) {
		// Jump to the next quote; it ends the string unless an escape
		// comes first (IndexByte is much faster than a loop over bytes
		// on a long string).
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			return len(body)
		}
		e := bytes.IndexByte(body[i:i+q], '\\')
		if e < 0 {
			return i + q
		}
		i += e + 2
	}
	return len(body)
}

// foldHash returns a hash of the raw text of a name that is the same for
// any two plain ASCII names equal under foldKey, and ascii false when raw
// is not plain ASCII (it has an escape or a byte outside ASCII), for which
// the hash means nothing.
//
// For ASCII, foldKey upper-cases letters, and a letter's two cases differ
// only in bit 0x20: setting that bit in every byte (which merges more than
// the case of letters, which only costs a comparison) makes variants equal,
// eight bytes at a time.
func foldHash(raw []byte) (key uint64, ascii bool) {
	const (
		fold  = 0x20 * ones
		prime = 0x9e3779b97f4a7c15 // odd: each step is a bijection of w
	)
	h, bad := uint64(len(raw)), uint64(0)
	for len(raw) > 0 {
		var w uint64
		if len(raw) >= 8 {
			w = binary.LittleEndian.Uint64(raw)
			raw = raw[8:]
		} else if cap(raw) >= 8 {
			// The bytes past raw in its array (the body after the
			// name) are read whole and masked off: a byte at a time
			// cost more than the rest of the hash.
			w = binary.LittleEndian.Uint64(raw[:8]) & (1<<(8*len(raw)) - 1)
			raw = nil
		} else {
			for i := len(raw) - 1; i >= 0; i-- {
				w = w<<8 | uint64(raw[i])
			}
			raw = nil
		}
		// The padding zero bytes of the last word are neither backslashes
		// nor outside ASCII.
		bad |= w&highs | zeroBytes(w^backslashes)
		h = bits.RotateLeft64((h^(w|fold))*prime, 29)
	}
	return h, bad == 0
}

// skipWhite returns the offset of the first byte at or after i above
// ' ', or len(raw). Indentation runs for several bytes on every line of a
// body as the providers send it: a word at a time, a run costs one or two
// steps rather than one per byte.
func skipWhite(raw []byte, i int) int {
	for ; i+8 <= len(raw); i += 8 {
		w := binary.LittleEndian.Uint64(raw[i:])
		// With its high bit set, a byte below 0x80 minus 0x21 keeps the
		// bit (no borrow crosses bytes) exactly when it is above ' ';
		// w&highs marks the bytes from 0x80 up.
		if m := ((w|highs)-0x21*ones)&highs | w&highs; m != 0 {
			return i + firstMarked(m)
		}
	}
	for i < len(raw) && raw[i] <= ' ' {
		i++
	}
	return i
}

// copyString copies the rest of a string whose content starts at raw[i]
// (its opening quote is at dst[at], already written) to dst, its closing
// quote included, a word at a time, and returns the offsets past it in dst
// and raw. dst has room for raw whole and at <= i: a word written at at
// never overruns what appendCompact was given. Inline in appendCompact's
// loop, the names and short values of an indented body cost no call to
// stringEnd and none to copy.
func copyString(dst []byte, at int, raw []byte, i int) (int, int) {
	at++
	for i+8 <= len(raw) {
		w := binary.LittleEndian.Uint64(raw[i:])
		binary.LittleEndian.PutUint64(dst[at:], w)
		m := zeroBytes(w^quotes) | zeroBytes(w^backslashes)
		if m == 0 {
			at, i = at+8, i+8
			continue
		}
		k := firstMarked(m)
		at, i = at+k, i+k
		if raw[i] == '"' {
			return at + 1, i + 1
		}
		// A backslash and the byte it escapes.
		if i+1 >= len(raw) {
			return at + 1, i + 1
		}
		dst[at], dst[at+1] = raw[i], raw[i+1]
		at, i = at+2, i+2
	}
	for i < len(raw) {
		c := raw[i]
		dst[at] = c
		at, i = at+1, i+1
		switch {
		case c == '"':
			return at, i
		case c == '\\' && i < len(raw):
			dst[at] = raw[i]
			at, i = at+1, i+1
		}
	}
	return at, i
}

// appendCompact appends raw, a valid JSON value, to dst without
// insignificant white space: what json.Compact writes for it. Outside
// strings, valid JSON has no byte below 0x21 but white space (nor one
// above 0x7f), so a word without white space or quote is copied whole.
func appendCompact(dst, raw []byte) []byte {
	at := len(dst)
	// Room for raw whole: what is written at dst[at:] never runs ahead of
	// what is read at raw[i:], so whole words fit too.
	dst = slices.Grow(dst, len(raw))[:at+len(raw)]
	i := 0
	for i+8 <= len(raw) {
		w := binary.LittleEndian.Uint64(raw[i:])
		binary.LittleEndian.PutUint64(dst[at:], w)
		m := (w-0x21*ones)&^w&highs | zeroBytes(w^quotes)
		if m == 0 {
			at, i = at+8, i+8
			continue
		}
		k := firstMarked(m)
		at, i = at+k, i+k // the bytes before the marked one are in dst
		if raw[i] == '"' {
			at, i = copyString(dst, at, raw, i+1)
			continue
		}
		i = skipWhite(raw, i)
	}
	for i < len(raw) {
		switch c := raw[i]; {
		case c == '"':
			end := min(stringEnd(raw, i+1)+1, len(raw))
			at += copy(dst[at:], raw[i:end])
			i = end
		case c <= ' ':
			i++
		default:
			dst[at] = c
			at, i = at+1, i+1
		}
	}
	return dst[:at]
}
