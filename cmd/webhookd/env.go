package main

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// envVar is one variable: a struct field tagged envconfig:"NAME", with
// default:"..." and desc:"..." (its help line), and on a provider's enabling
// variables example:"..." (a value tests set); or a providers.Variable of
// a provider whose variables are data (a spec), which sets itself.
type envVar struct {
	key, def, desc, example string
	field                   reflect.Value
	set                     func(string) error
}

// envVars lists the variables of the struct ptr points to, prefixed, named
// as the envconfig package names them (TestEnvVarsAreEnvconfigs), which
// renders them in help. loadVars reads them instead of envconfig.Process
// because Process reads only the process environment and takes a variable
// set to the empty string as a value, where webhookd reads a snapshot (no
// os.Setenv in tests, no edits to the environment) and takes empty as unset.
func envVars(ptr any) []envVar {
	if l, ok := ptr.(providers.VariableLister); ok {
		var out []envVar
		for _, v := range l.Variables() {
			out = append(out, envVar{key: envName(v.Name), def: v.Default, desc: v.Help, example: v.Example, set: v.Set})
		}
		return out
	}
	v := reflect.ValueOf(ptr).Elem()
	var out []envVar
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, ok := f.Tag.Lookup("envconfig")
		if !ok {
			continue
		}
		out = append(out, envVar{
			key: envName(name), def: f.Tag.Get("default"), desc: f.Tag.Get("desc"),
			example: f.Tag.Get("example"), field: v.Field(i),
		})
	}
	return out
}

// envName is the variable name the operator sets for a tagged name.
func envName(name string) string { return envPrefix + "_" + name }

// loadVars fills vars from lookup. A variable that is unset or set to the
// empty string takes its default: compose files and manifests often pass
// every variable, empty or not. Errors name the variable and never quote a
// list's items (they are secrets).
func loadVars(vars []envVar, lookup func(string) string) error {
	for _, v := range vars {
		s := lookup(v.key)
		if s == "" {
			s = v.def
		}
		if s == "" {
			continue
		}
		set := v.set
		if set == nil {
			set = func(s string) error { return setField(v.field, s) }
		}
		if err := set(s); err != nil {
			return fmt.Errorf("%s: %w", v.key, err)
		}
	}
	return nil
}

// errUnsupportedType is a settings field of a type loadVars cannot fill.
var errUnsupportedType = errors.New("unsupported field type")

var durationType = reflect.TypeFor[time.Duration]()

// maxDuration bounds every duration variable, whatever its own checks.
// A Duration holds 292 years: a lease, a retention or a tolerance near that
// overflows once it is added to another (the lease to the store timeouts,
// DISPATCH_TIMEOUT to the answer's write time) or to the time now, and LMDB
// stores times as nanoseconds since 1970, which end in 2262. A hundred
// years leaves room for every such sum.
const maxDuration = 100 * 365 * 24 * time.Hour

func setField(f reflect.Value, s string) error {
	bad := func() error { return fmt.Errorf("cannot parse %q as %s", s, f.Type()) }
	switch {
	case f.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return bad()
		}
		if d > maxDuration {
			return fmt.Errorf("%s is longer than %s (100 years), the longest duration webhookd takes", s, maxDuration)
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
		items, err := providers.SplitList(s)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(items))
	default:
		// A programming error in a settings struct, found by the tests.
		return fmt.Errorf("%w %s", errUnsupportedType, f.Type())
	}
	return nil
}

// unknownVariables returns a warning for each WEBHOOKD_* name in environ
// (KEY=VALUE strings) that no variable reads, naming the nearest known one:
// a typo such as WEBHOOKD_STRIPE_TOLRANCE would otherwise leave the default
// silently in force. Variables of the tests (WEBHOOKD_TEST_*) are not
// webhookd's and are left alone. Values are never repeated.
func unknownVariables(environ []string, known []string) []string {
	isKnown := make(map[string]bool, len(known))
	for _, k := range known {
		isKnown[k] = true
	}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, envPrefix+"_") || strings.HasPrefix(k, envPrefix+"_TEST_") || isKnown[k] {
			continue
		}
		out = append(out, fmt.Sprintf("%s is not a webhookd variable and is ignored; did you mean %s?", k, nearest(k, known)))
	}
	sort.Strings(out)
	return out
}

// nearest returns the name in names at the smallest edit distance from s
// (the first such, in the order given).
func nearest(s string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(s, n); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (variable names are ASCII).
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
