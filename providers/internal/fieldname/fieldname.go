// Package fieldname holds the one rule every form-body provider (duitku,
// braintree, the spec engine's form bodies) applies to a field's name.
package fieldname

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
