// Package form reads an application/x-www-form-urlencoded body one way
// only, for every provider whose gateway posts a form (duitku, braintree,
// the spec engine's `body: form`): names plain (Plain) and
// unique under case folding, so that no field appended to a genuine
// signed form can stand, in the core service's decoder, for a field that
// was verified. Each provider wraps these errors in its own, which set the
// answer's status.
package form

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// The ways a body is not a form read one way. Their texts are written to
// follow "body is not a form (...)".
var (
	// ErrEmpty means the body is empty.
	ErrEmpty = errors.New("empty")
	// ErrEmptyPair means two "&" follow each other, or one starts or
	// ends the body.
	ErrEmptyPair = errors.New("an empty pair")
	// ErrNameEscape means a field's name has a bad %-escape.
	ErrNameEscape = errors.New("a bad escape in a field name")
	// ErrName means a field's name is not plain (Plain): PHP
	// reads "a.b" and "a[]" as other names than they are spelt.
	ErrName = errors.New("a field name other than letters, digits, _ and -")
	// ErrRepeated means a field is given twice, names compared without
	// case: a binder that folds case and keeps the last value would read
	// another field than the one verified.
	ErrRepeated = errors.New("a field given twice")
	// ErrTooMany means the form has more than MaxFields fields.
	ErrTooMany = errors.New("too many fields")
	// ErrEscape means a value has a bad %-escape.
	ErrEscape = errors.New("a bad escape in a value")
)

// MaxFields bounds the fields of one form: every gateway's callback has
// a few dozen at most, and names are compared with every other.
const MaxFields = 256

// Field is one name=value pair: its name unescaped, its value as sent,
// and where that raw value lies in the body (With rewrites it there).
type Field struct {
	Name string
	Raw  string
	// Start and End delimit Raw in the body; Start is just after "=", or
	// at the end of the name when the pair has no "=".
	Start, End int
}

// Value returns the field's value unescaped as net/url does.
func (f Field) Value() (string, error) {
	v, err := url.QueryUnescape(f.Raw)
	if err != nil {
		return "", ErrEscape
	}
	return v, nil
}

// Form is a body's fields in the order sent.
type Form []Field

// Parse reads body pair by pair. Values are unescaped only when read
// (Field.Value, Get), so that a provider may make a bad escape the error
// of the field that holds it; Values checks them all.
func Parse(body []byte) (Form, error) {
	if len(body) == 0 {
		return nil, ErrEmpty
	}
	var (
		f  Form
		at int
	)
	for pair := range strings.SplitSeq(string(body), "&") {
		start := at
		at += len(pair) + 1
		if pair == "" {
			return nil, ErrEmptyPair
		}
		if len(f) == MaxFields {
			return nil, ErrTooMany
		}
		rawName, rawValue, hasValue := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, ErrNameEscape
		}
		if !Plain(name) {
			return nil, ErrName
		}
		// Plain names are ASCII, so EqualFold folds them as a
		// case-insensitive binder would.
		for _, g := range f {
			if strings.EqualFold(g.Name, name) {
				return nil, ErrRepeated
			}
		}
		vs := start + len(rawName)
		if hasValue {
			vs++
		}
		f = append(f, Field{Name: name, Raw: rawValue, Start: vs, End: start + len(pair)})
	}
	return f, nil
}

// Values reports ErrEscape if any value has a bad %-escape.
func (f Form) Values() error {
	for _, g := range f {
		if _, err := g.Value(); err != nil {
			return err
		}
	}
	return nil
}

// Index returns the position of the field named name, or -1.
func (f Form) Index(name string) int {
	for i, g := range f {
		if g.Name == name {
			return i
		}
	}
	return -1
}

// Get returns the unescaped value of the field named name; present is
// false when there is none.
func (f Form) Get(name string) (value string, present bool, err error) {
	i := f.Index(name)
	if i < 0 {
		return "", false, nil
	}
	v, err := f[i].Value()
	return v, true, err
}

// With returns a copy of body whose field name holds value (escaped):
// rewritten in place, or appended when the form has no such field;
// every other byte is kept. f is body's form.
func (f Form) With(body []byte, name, value string) []byte {
	esc := url.QueryEscape(value)
	i := f.Index(name)
	if i < 0 {
		out := append([]byte(nil), body...)
		return append(append(out, "&"+url.QueryEscape(name)+"="...), esc...)
	}
	g := f[i]
	out := make([]byte, 0, len(body)+len(esc)+1)
	out = append(out, body[:g.Start]...)
	if g.Start == g.End && (g.Start == 0 || body[g.Start-1] != '=') {
		out = append(out, '=')
	}
	out = append(out, esc...)
	return append(out, body[g.End:]...)
}

// Fingerprint hashes the fields named, in that order, each present one as
// its length-prefixed name and unescaped value, so that no two forms hash
// alike unless those fields are equal: the fields a gateway's retry keeps,
// while it may add or reorder the others. f's values must unescape
// (Values).
func (f Form) Fingerprint(names []string) string {
	h := sha256.New()
	for _, name := range names {
		v, ok, _ := f.Get(name)
		if !ok {
			continue
		}
		h.Write([]byte(strconv.Itoa(len(name)) + ":" + name + strconv.Itoa(len(v)) + ":" + v))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Plain reports whether s is a field name that every form decoder
// reads as spelt: 1 to 64 letters, digits, "_" and "-". PHP reads "a.b",
// "a b" and "a[]" as other names ("a_b", an array "a"), so a field of such
// a name, appended to a genuine signed form and forwarded byte for byte,
// could stand for a signed field in a PHP core service. Being ASCII, a
// plain name is also folded by strings.ToLower exactly as a
// case-insensitive binder would fold it.
func Plain(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
