package main

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// envVar is one variable: a struct field tagged envconfig:"NAME", with
// default:"..." and desc:"..." (its help line); or a providers.Variable of
// a provider whose variables are data (a spec), which sets itself, and
// whose example is the spec's own (providers.Variable.Example).
type envVar struct {
	key, def, desc, example string
	field                   reflect.Value
	set                     func(string) error
}

// envVars lists the variables of the struct ptr points to, prefixed, named
// as the envconfig package names them (TestEnvVarsAreEnvconfigs), which
// renders them in help; providers.VariablesOf is the one definition of
// them, which a WEBHOOKD_CONFIG file's settings go through too. loadVars
// reads them instead of envconfig.Process because Process reads only the
// process environment and takes a variable set to the empty string as a
// value, where webhookd reads a snapshot (no os.Setenv in tests, no edits
// to the environment) and takes empty as unset.
func envVars(ptr any) []envVar {
	var out []envVar
	for _, v := range providers.VariablesOf(ptr) {
		out = append(out, envVar{key: envName(v.Name), def: v.Default, desc: v.Help, example: v.Example, field: v.Field, set: v.Set})
	}
	return out
}

// envName is the variable name the operator sets for a tagged name.
func envName(name string) string { return envPrefix + "_" + name }

// loadVars fills vars from lookup (providers.LoadVariables): unset or
// empty takes the default; errors name the variable.
func loadVars(vars []envVar, lookup func(string) string) error {
	pv := make([]providers.Variable, len(vars))
	for i, v := range vars {
		pv[i] = providers.Variable{Name: v.key, Default: v.def, Set: v.set}
		if pv[i].Set == nil {
			field := v.field
			pv[i].Set = func(s string) error { return setField(field, s) }
		}
	}
	return providers.LoadVariables(pv, lookup, func(v providers.Variable) string { return v.Name })
}

// errUnsupportedType and setField are providers'.
var errUnsupportedType = providers.ErrUnsupportedType

var durationType = reflect.TypeFor[time.Duration]()

func setField(f reflect.Value, s string) error { return providers.SetField(f, s) }

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

// nearest returns the name in names nearest to s (providers.Nearest).
func nearest(s string, names []string) string { return providers.Nearest(s, names) }
