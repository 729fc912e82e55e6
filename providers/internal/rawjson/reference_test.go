package rawjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"slices"
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
