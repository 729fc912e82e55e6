package spec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

// TestReplacedSettings: the specs that replaced the stripe and paddle
// adapters keep their variables and their checks: a tolerance of 0 is
// refused in the same words, even while the provider is off, the default
// is 5m, and the provider is built only once a secret is set.
func TestReplacedSettings(t *testing.T) {
	specs, err := spec.Builtin()
	require.NoError(t, err)
	byName := map[string]*spec.Spec{}
	for _, s := range specs {
		byName[s.Name()] = s
	}
	env := providers.Env{Var: func(name string) string { return "WEBHOOKD_" + name }}
	for _, tc := range []struct {
		name, secrets, tolerance, noun, secret string
	}{
		{"stripe", "STRIPE_SECRETS", "STRIPE_TOLERANCE", "signing secret", "whsec_a"},
		{"paddle", "PADDLE_SECRETS", "PADDLE_TOLERANCE", "notification destination secret", "pdl_ntfset_a"},
	} {
		s := byName[tc.name]
		require.NotNil(t, s, tc.name)
		e := s.Entry()
		require.Equal(t, tc.secrets, e.Secret, tc.name)
		require.Equal(t, tc.noun, e.SecretNoun, tc.name)
		st := e.Settings().(*spec.Settings)
		vars := st.Variables()
		require.Len(t, vars, 2, tc.name)
		require.Equal(t, tc.secrets, vars[0].Name, tc.name)
		require.Equal(t, tc.tolerance, vars[1].Name, tc.name)
		require.Equal(t, "5m", vars[1].Default, tc.name)

		require.NoError(t, vars[1].Set("0s"))
		require.EqualError(t, st.Check(env), "WEBHOOKD_"+tc.tolerance+": must be positive (0 would disable the replay check)", tc.name)
		require.NoError(t, vars[1].Set("5m"))
		require.NoError(t, st.Check(env), tc.name)
		off, err := st.Build()
		require.NoError(t, err)
		require.Nil(t, off, tc.name)
		require.NoError(t, vars[0].Set(" "+tc.secret+" , "+tc.secret+"2"))
		require.NoError(t, st.Check(env), tc.name)
		p, err := st.Build()
		require.NoError(t, err)
		require.Equal(t, tc.name, p.Name())
		require.Nil(t, p.(interface {
			Ack() *providers.Acknowledgement
		}).Ack(), "%s: the core service's answer is relayed", tc.name)
	}
}
