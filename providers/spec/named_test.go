package spec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/spec"
)

// TestBuiltinNamed: every built-in spec is found by its name, compiled
// from the same bytes Builtin compiles, and a name the binary embeds no
// spec of is an error naming it.
func TestBuiltinNamed(t *testing.T) {
	specs, err := spec.Builtin()
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	for _, s := range specs {
		got, err := spec.BuiltinNamed(s.Name())
		require.NoError(t, err, s.Name())
		require.True(t, got.SameSource(s), s.Name())
		require.Equal(t, s.File(), got.File())
	}
	for _, name := range []string{"nosuch", "", "../builtin/stripe", "README"} {
		_, err := spec.BuiltinNamed(name)
		require.ErrorContains(t, err, "no built-in provider spec named", name)
	}
	_, err = spec.NewBuiltin("stripe", nil, nil, nil)
	require.Error(t, err, "a provider without a secret")
}
