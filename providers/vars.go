package providers

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// VariablesOf lists the variables of the settings ptr points to: a
// VariableLister's own, or one per field of a struct tagged
// envconfig:"NAME" (with default:"..." and desc:"..."),
// whose Set parses the value into the field (SetField). It is the one
// definition of how a provider's settings are read, whether the value comes
// from a variable (cmd/webhookd) or from a source's settings in a
// WEBHOOKD_CONFIG file (config): the same names, defaults, parsing and
// errors.
func VariablesOf(ptr any) []Variable {
	if l, ok := ptr.(VariableLister); ok {
		return l.Variables()
	}
	v := reflect.ValueOf(ptr).Elem()
	var out []Variable
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, ok := f.Tag.Lookup("envconfig")
		if !ok {
			continue
		}
		field := v.Field(i)
		out = append(out, Variable{
			Name: name, Default: f.Tag.Get("default"), Help: f.Tag.Get("desc"),
			List: field.Kind() == reflect.Slice, Field: field,
			Set: func(s string) error { return SetField(field, s) },
		})
	}
	return out
}

// ErrUnsupportedType is a settings field of a type SetField cannot fill.
var ErrUnsupportedType = errors.New("unsupported field type")

var durationType = reflect.TypeFor[time.Duration]()

// MaxDuration bounds every duration variable and setting, whatever its own
// checks. A Duration holds 292 years: a lease, a retention or a tolerance
// near that overflows once it is added to another (the lease to the store
// timeouts, DISPATCH_TIMEOUT to the answer's write time) or to the time
// now, and LMDB stores times as nanoseconds since 1970, which end in 2262.
// A hundred years leaves room for every such sum.
const MaxDuration = 100 * 365 * 24 * time.Hour

// SetField parses s into f: a string, bool, int, int32, int64,
// time.Duration or []string (a comma-separated list, SplitList). Its error
// never quotes a list's items (they are secrets).
func SetField(f reflect.Value, s string) error {
	bad := func() error { return fmt.Errorf("cannot parse %q as %s", s, f.Type()) }
	switch {
	case f.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return bad()
		}
		if d > MaxDuration {
			return fmt.Errorf("%s is longer than %s (100 years), the longest duration webhookd takes", s, MaxDuration)
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.String:
		f.SetString(s)
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return bad()
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64 || f.Kind() == reflect.Int32:
		n, err := strconv.ParseInt(s, 0, f.Type().Bits())
		if err != nil {
			return bad()
		}
		f.SetInt(n)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		items, err := SplitList(s)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(items))
	default:
		// A programming error in a settings struct, found by the tests.
		return fmt.Errorf("%w %s", ErrUnsupportedType, f.Type())
	}
	return nil
}

// LoadVariables sets each of vars from lookup (called with the variable's
// Name). A variable that lookup leaves empty takes its default: compose
// files and manifests often pass every variable, empty or not. name turns
// a variable into what its errors call it (the environment variable, or a
// file's setting).
func LoadVariables(vars []Variable, lookup func(name string) string, name func(v Variable) string) error {
	for _, v := range vars {
		s := lookup(v.Name)
		if s == "" {
			s = v.Default
		}
		if s == "" {
			continue
		}
		if err := v.Set(s); err != nil {
			return fmt.Errorf("%s: %w", name(v), err)
		}
	}
	return nil
}

// IsSecretVariable reports whether a variable of a provider (tagged name,
// without the command's prefix) holds a secret: the provider's enabling
// variable (Entry.Secret), one a provider marks (Variable.Secret), or one
// whose name says so. A secret written in clear in a configuration file
// makes serve warn when the file is readable by others.
func IsSecretVariable(e Entry, v Variable) bool {
	if v.Secret || v.Name == e.Secret {
		return true
	}
	for _, w := range []string{"SECRET", "KEY", "TOKEN", "PASSWORD", "SALT", "CREDENTIAL", "HASH", "AUTH"} {
		if strings.Contains(v.Name, w) {
			return true
		}
	}
	return false
}

// Nearest returns the name in names at the smallest edit distance from s
// (the first such, in the order given): the suggestion of a typo warning,
// for a variable or a file's setting alike.
func Nearest(s string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(s, n); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (variable and setting names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
