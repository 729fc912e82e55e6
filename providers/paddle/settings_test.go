package paddle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paddle"
)

func TestSettings(t *testing.T) {
	env := providers.Env{Var: func(name string) string { return "WEBHOOKD_" + name }}
	s := paddle.Settings{Tolerance: 0}
	require.EqualError(t, s.Check(env), "WEBHOOKD_PADDLE_TOLERANCE: must be positive (0 would disable the replay check)")
	s.Tolerance = tolerance
	require.NoError(t, s.Check(env))
	off, err := s.Build()
	require.NoError(t, err)
	require.Nil(t, off)
	s.Secrets = []string{vecGoSecret, vecPySecretGood}
	p, err := s.Build()
	require.NoError(t, err)
	require.Equal(t, paddle.Name, p.Name())
}
