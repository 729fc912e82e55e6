package twoctwop_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	twoctwop "github.com/webhookd/webhookd/providers/2c2p"
)

func TestSettings(t *testing.T) {
	env := providers.Env{Var: func(name string) string { return "WEBHOOKD_" + name }}
	off := &twoctwop.Settings{}
	require.NoError(t, off.Check(env))
	p, err := off.Build()
	require.NoError(t, err)
	require.Nil(t, p, "off without keys")

	on := &twoctwop.Settings{SecretKeys: []string{guideKey}}
	require.NoError(t, on.Check(env))
	p, err = on.Build()
	require.NoError(t, err)
	require.Equal(t, "2c2p", p.Name())
	require.Equal(t, "2C2P_SECRET_KEYS", twoctwop.Entry().Secret)
}
