package rawjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseReference is Parse as it was before it moved to jsontext: encoding/json's
// Decoder.Token, member by member, then checkNames. FuzzParseDifferential
// holds the tokenizer to its decisions and framing.
func parseReference(body []byte) (members map[string]Member, open int, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, 0, ErrNotObject
	}
	members, open = make(map[string]Member), int(dec.InputOffset())
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, 0, ErrNotObject
		}
		name, ok := tok.(string)
		if !ok {
			return nil, 0, ErrNotObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, ErrNotObject
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		if start < 0 || end > len(body) || !bytes.Equal(body[start:end], raw) {
			return nil, 0, ErrNotObject
		}
		if _, dup := members[name]; dup {
			return nil, 0, ErrDuplicate
		}
		members[name] = Member{Value: raw, Start: start, End: end}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, 0, ErrNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, 0, ErrNotObject
	}
	if err := checkNames(body); err != nil {
		return nil, 0, err
	}
	return members, open, nil
}

// canonicalReference is Canonical as it was: a decode into interface values
// and encoding/json's Marshal, which sorts map keys.
func canonicalReference(buf *bytes.Buffer, raw json.RawMessage) error {
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

// fingerprintReference is Fingerprint() with no names, as it was, of the
// members parseReference returned.
func fingerprintReference(t testing.TB, members map[string]Member) string {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, name := range slices.Sorted(maps.Keys(members)) {
		if i > 0 {
			buf.WriteByte(',')
		}
		quoted, err := json.Marshal(name)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(quoted)
		buf.WriteByte(':')
		if err := canonicalReference(&buf, members[name].Value); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteByte('}')
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// checkNamesReference is checkNames the plain way, as it was before it
// scanned a word at a time and hashed names: a byte at a time, then every
// pair of names of each object compared with compareRaw. body must be
// valid JSON.
func checkNamesReference(body []byte) error {
	var open [][][]byte // the names of each open object
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{':
			open = append(open, nil)
		case '}':
			names := open[len(open)-1]
			open = open[:len(open)-1]
			for a := range names {
				for b := range a {
					if compareRaw(names[a], names[b]) == 0 {
						return ErrDuplicate
					}
				}
			}
		case '"':
			end := stringEndBytewise(body, i+1)
			if nameColon(body, end+1) >= 0 {
				open[len(open)-1] = append(open[len(open)-1], body[i+1:end])
			}
			i = end
		}
	}
	return nil
}

// FuzzCheckNames holds checkNames to checkNamesReference on valid JSON: the
// same refusals at every depth, whatever the names (case, folding runes,
// escapes, invalid UTF-8, many members, colliding keys).
func FuzzCheckNames(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "fixtures", "*", "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{"a":1,"A":2}`, `{"a":{"b":1,"c":{"B":2}},"d":[{"x":1},{"X":1,"y":{"Y":2,"y":3}}]}`,
		`{"transaction_status":1,"tranſaction_ſtatus":2}`, `{"a\u0041":1,"aa":2}`, "{\"a\xff\":1,\"a\xfe\":2}",
		`{"ſ":1,"S":2}`, `{"ß":1,"ss":2}`, `{"id":{"ID":{"Id":1}}}`, `{"y":"Y","_":"_","[":["{"]}`,
		`{"` + strings.Repeat("m", 70) + `":1,"` + strings.Repeat("M", 70) + `":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		got, want := checkNames(body), checkNamesReference(body)
		if !errors.Is(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("checkNames(%q) = %v, the reference gives %v", body, got, want)
		}
	})
}
