package providertest

import (
	"bytes"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// unsignedValue is what the kit puts in place of an unsigned field's whole
// value: a token any key accepts, as an attacker's reference=ATTACK.
const unsignedValue = "WEBHOOKD0"

// variant is a signed body with one unsigned field changed, not signed
// again.
type variant struct {
	field string
	body  []byte
}

// checkUnsignedFields changes, one at a time, every top-level field of a
// signed body that the signature does not cover (neither in SignedFields
// nor the SignatureField), without signing it again, as anyone holding one
// genuine delivery can. Each change must fail verification, or leave every
// event's key and type as they were: else one captured delivery is a
// source of new events, each forwarded as genuine. Fields in
// ConfirmedFields are exempt (the adapter's Confirmer checks them with the
// provider); a BodyUnsigned provider is skipped with its
// UnsignedKeyReason. For a body signed whole (SignedFields nil), every
// change fails verification.
func (k Kit) checkUnsignedFields(t *testing.T, p providers.Provider, h http.Header, body []byte, ev []providers.Event) {
	if k.BodyUnsigned {
		t.Skip(k.UnsignedKeyReason)
	}
	if len(k.ConfirmedFields) > 0 {
		_, ok := p.(providers.Confirmer)
		require.True(t, ok, "Kit.ConfirmedFields: %T must be a providers.Confirmer that checks them", p)
	}
	exempt := append(append([]string{k.SignatureField}, k.SignedFields...), k.ConfirmedFields...)
	var vs []variant
	if k.Form {
		vs = formVariants(t, body, exempt)
	} else {
		vs = jsonVariants(t, body, exempt)
	}
	require.NotEmpty(t, vs, "the fixture has no field to change")
	want := keysAndTypes(ev)
	for _, v := range vs {
		require.NotEqual(t, body, v.body, "variant of %s", v.field)
		if verify(p, h, v.body) != nil {
			continue
		}
		got, err := events(p, h, v.body)
		if err != nil {
			continue // no event: answered 400, nothing forwarded
		}
		require.Equal(t, want, keysAndTypes(got),
			"%s is not signed, yet changing it (body %q) changes the event key or type: a captured delivery could be re-sent as new events. "+
				"Derive them from signed data, or confirm the field with the provider (Kit.ConfirmedFields)", v.field, v.body)
	}
}

func keysAndTypes(evs []providers.Event) [][2]string {
	out := make([][2]string, len(evs))
	for i, ev := range evs {
		out[i] = [2]string{ev.Key, ev.Type}
	}
	return out
}

// swapAlnum turns a letter into the next one of its case and a digit into
// its neighbour (0 and 1, 2 and 3, ...), so that a token stays a token.
func swapAlnum(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c ^ 0x01
	case 'a' <= c && c <= 'z':
		return 'a' + (c-'a'+1)%26
	case 'A' <= c && c <= 'Z':
		return 'A' + (c-'A'+1)%26
	}
	return c
}

func swapAt(body []byte, at int) []byte {
	b := bytes.Clone(body)
	b[at] = swapAlnum(b[at])
	return b
}

func replaceRange(body []byte, start, end int, with string) []byte {
	out := make([]byte, 0, len(body)+len(with))
	out = append(out, body[:start]...)
	out = append(out, with...)
	return append(out, body[end:]...)
}

// formVariants changes each unsigned form field: a few of its letters and
// digits one at a time, and its whole value.
func formVariants(t *testing.T, body []byte, exempt []string) []variant {
	var out []variant
	for _, f := range formFields(t, body) {
		if slices.Contains(exempt, f.name) {
			continue
		}
		for _, at := range formPositions(body, f.start, f.end) {
			out = append(out, variant{f.name, swapAt(body, at)})
		}
		if string(body[f.start:f.end]) != unsignedValue {
			out = append(out, variant{f.name, replaceRange(body, f.start, f.end, unsignedValue)})
		}
	}
	return out
}

// jsonVariants changes each unsigned top-level member of a JSON body: a
// few of its letters and digits one at a time (inside a string, a number
// or a nested value), and its whole value for another of its kind.
func jsonVariants(t *testing.T, body []byte, exempt []string) []variant {
	var out []variant
	for _, name := range topNames(t, body) {
		if slices.Contains(exempt, name) {
			continue
		}
		m := member(t, body, name)
		lo, hi := m.Start, m.End
		var whole string
		switch v := string(m.Value); {
		case v == "true":
			whole = "false"
		case v == "false":
			whole = "true"
		case v == "null":
			whole = `"` + unsignedValue + `"`
		case v[0] == '"':
			lo, hi = lo+1, hi-1
			whole = `"` + unsignedValue + `"`
		case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
			whole = "1" + v
			if v[0] == '-' {
				whole = "-1" + v[1:]
			}
		}
		for _, at := range formPositions(body, lo, hi) {
			out = append(out, variant{name, swapAt(body, at)})
		}
		if whole != "" && whole != string(m.Value) {
			out = append(out, variant{name, replaceRange(body, m.Start, m.End, whole)})
		}
	}
	return out
}
