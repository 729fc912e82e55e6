package providers

import (
	"fmt"
	"reflect"
	"strings"
)

// Variable is one of a provider's variables declared as a value: for a
// provider whose variables are data (a provider spec, providers/spec)
// rather than the tagged fields of a settings struct. The command reads,
// documents and checks it exactly as it does a tagged field: help, the
// unknown-variable warnings, and errors that name it.
type Variable struct {
	// Name is the variable's name without the command's prefix
	// (ACME_SECRETS).
	Name string
	// Default is used when the variable is unset or empty.
	Default string
	// Help is its line in `webhookd help`.
	Help string
	// Example is the value of the spec's own first example (the secret it
	// was signed with, its required settings), on the variables that
	// enable a spec: `webhookd providers check` checks the settings with
	// it while the variable is unset. A tagged settings field has none.
	Example string
	// Set stores the value (the default when the variable is unset or
	// empty; not called when both are empty). Its error does not quote
	// the value, which may be a secret; the command adds the variable's
	// name.
	Set func(value string) error
	// List says the value is a comma-separated list (SplitList), which a
	// WEBHOOKD_CONFIG file may also write as a YAML sequence.
	List bool
	// Secret marks a variable that holds a secret besides the provider's
	// enabling one (see IsSecretVariable).
	Secret bool
	// Field is the settings struct's field a tagged variable sets
	// (VariablesOf); the zero Value for a VariableLister's.
	Field reflect.Value
}

// VariableLister is implemented by a provider's Settings whose variables
// are Variables rather than tagged struct fields.
type VariableLister interface {
	Variables() []Variable
}

// SplitList reads a comma-separated list variable: "a, b" is two items,
// each trimmed of spaces. An empty item is a typo (a doubled or trailing
// comma), refused by its position, never by value: the items are often
// secrets.
func SplitList(s string) ([]string, error) {
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
		if items[i] == "" {
			return nil, fmt.Errorf("item %d of %d is empty", i+1, len(items))
		}
	}
	return items, nil
}
