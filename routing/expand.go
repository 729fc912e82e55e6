package routing

import (
	"fmt"
	"strings"
)

// expand replaces each ${NAME} in s with the environment variable NAME
// ($${ is a literal ${) and reports the names it read, and whether s is
// written in the file (literal: a value that reads no variable at all;
// "Bearer ${TOKEN}" takes its secret from the environment). An unset or
// empty variable is an error naming it, never a value.
func expand(s string, lookup func(string) (string, bool)) (out string, names []string, literal bool, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, s != "", nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", nil, false, fmt.Errorf("${ without its closing }")
			}
			name := s[i+2 : i+end]
			if !validVarName(name) {
				return "", nil, false, fmt.Errorf("${%s}: not a variable name", name)
			}
			v, ok := lookup(name)
			if !ok || v == "" {
				return "", nil, false, fmt.Errorf("${%s}: %s is not set", name, name)
			}
			b.WriteString(v)
			names = append(names, name)
			i += end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), names, len(names) == 0 && s != "", nil
}

func validVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
