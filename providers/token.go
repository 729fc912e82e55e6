package providers

// IsToken reports whether s can be part of an event key or event type: one
// to max bytes of printable ASCII without spaces. Keys end up in store keys
// and, like types, in headers sent downstream, so anything that could be cut,
// folded or injected there (controls, spaces, non-ASCII) is refused by the
// adapters rather than escaped.
func IsToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
