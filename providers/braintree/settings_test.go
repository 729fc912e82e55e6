package braintree_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/braintree"
)

func TestSettings(t *testing.T) {
	env := providers.Env{Var: func(name string) string { return "WEBHOOKD_" + name }}
	off := &braintree.Settings{}
	require.NoError(t, off.Check(env))
	p, err := off.Build()
	require.NoError(t, err)
	require.Nil(t, p, "off without keys")

	bad := &braintree.Settings{Keys: []string{sdkKeys, "no_colon_secret"}}
	err = bad.Check(env)
	require.ErrorContains(t, err, `WEBHOOKD_BRAINTREE_KEYS: braintree: key pair 2 of 2: not public_key:private_key`)
	require.NotContains(t, err.Error(), "no_colon_secret")

	on := &braintree.Settings{Keys: []string{sdkKeys}}
	require.NoError(t, on.Check(env))
	p, err = on.Build()
	require.NoError(t, err)
	require.Equal(t, braintree.Name, p.Name())
	require.Equal(t, "BRAINTREE_KEYS", braintree.Entry().Secret)
}
