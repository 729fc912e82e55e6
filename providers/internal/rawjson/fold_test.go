package rawjson

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestFoldKeyCoversOrbits checks foldKey on every rune: it is the same for
// all runes of a simple case folding orbit (what encoding/json and
// bytes.EqualFold take for one letter), for a rune's simple upper, lower and
// title case (what Java's equalsIgnoreCase, .NET's OrdinalIgnoreCase and
// lower-casing decoders compare), and its ASCII fast path agrees with the
// general rule.
func TestFoldKeyCoversOrbits(t *testing.T) {
	general := func(r rune) rune {
		r = unicode.ToUpper(unicode.ToLower(r))
		for {
			next := unicode.SimpleFold(r)
			if next <= r {
				return next
			}
			r = next
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		k := foldKey(r)
		if r < utf8.RuneSelf && k != general(r) {
			t.Fatalf("foldKey(%q) = %q, the general rule gives %q", r, k, general(r))
		}
		for _, other := range []rune{unicode.SimpleFold(r), unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r)} {
			if foldKey(other) != k {
				t.Fatalf("foldKey(%U) = %U but foldKey(%U) = %U", r, k, other, foldKey(other))
			}
		}
	}
	for _, tt := range []struct{ a, b rune }{{'s', 'ſ'}, {'k', '\u212a'}, {'i', 'ı'}, {'i', 'İ'}, {'σ', 'ς'}, {'A', 'a'}} {
		if foldKey(tt.a) != foldKey(tt.b) {
			t.Errorf("foldKey(%q) != foldKey(%q)", tt.a, tt.b)
		}
	}
	for _, tt := range []struct{ a, b rune }{{'s', 'ß'}, {'a', 'b'}, {'_', '-'}, {'i', 'j'}} {
		if foldKey(tt.a) == foldKey(tt.b) {
			t.Errorf("foldKey(%q) == foldKey(%q)", tt.a, tt.b)
		}
	}
}
