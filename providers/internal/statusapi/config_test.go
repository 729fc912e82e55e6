package statusapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers/internal/adapter"
	"github.com/webhookd/webhookd/providers/internal/statusapi"
)

// configured stands in for an adapter with a status check.
type configured struct{ status statusapi.Config }

func statusOf(c *configured) *statusapi.Config { return &c.status }

func TestConfigSetup(t *testing.T) {
	client := &http.Client{}
	for _, tc := range []struct {
		name string
		opts []adapter.Option[configured]
		want string // the API URL; "" for none
		err  string
	}{
		{"off", nil, "", ""},
		{"off with a client", []adapter.Option[configured]{statusapi.WithHTTPClient(statusOf, client)}, "", ""},
		{"default URL", []adapter.Option[configured]{statusapi.WithCheck(statusOf, "")}, "https://api.example", ""},
		{"given URL", []adapter.Option[configured]{statusapi.WithCheck(statusOf, "http://127.0.0.1:8089/")}, "http://127.0.0.1:8089", ""},
		{"plain http refused", []adapter.Option[configured]{statusapi.WithCheck(statusOf, "http://api.example")}, "", "duitku: " + statusapi.ErrPlainHTTP.Error()},
		{"zero timeout", []adapter.Option[configured]{statusapi.WithTimeout(statusOf, 0)}, "", "duitku: status timeout must be positive, got 0s"},
		{"negative timeout with check", []adapter.Option[configured]{statusapi.WithCheck(statusOf, ""), statusapi.WithTimeout(statusOf, -time.Second)}, "", "duitku: status timeout must be positive, got -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &configured{status: statusapi.NewConfig(5 * time.Second)}
			require.NoError(t, adapter.Apply(c, tc.opts))
			u, err := c.status.Setup("duitku", "https://api.example")
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if tc.want == "" {
				require.Nil(t, u)
				return
			}
			require.Equal(t, tc.want, u.String())
		})
	}
}

func TestConfigCall(t *testing.T) {
	client := &http.Client{}
	c := &configured{status: statusapi.NewConfig(5 * time.Second)}
	opts := []adapter.Option[configured]{
		statusapi.WithCheck(statusOf, ""),
		statusapi.WithHTTPClient(statusOf, client),
		statusapi.WithHTTPClient(statusOf, nil), // ignored
		statusapi.WithTimeout(statusOf, time.Second),
	}
	require.NoError(t, adapter.Apply(c, opts))
	_, err := c.status.Setup("duitku", "https://api.example")
	require.NoError(t, err)
	call := c.status.Call(64, errUnavailable)
	require.Equal(t, time.Second, call.Timeout)
	require.Equal(t, 64, call.MaxBytes)
	require.Equal(t, errUnavailable, call.Unavailable)
	require.NotSame(t, client, call.Client, "Setup copies the client to refuse redirects")
	require.Nil(t, client.CheckRedirect, "the caller's client is left alone")
	require.NotNil(t, call.Client.CheckRedirect)
}
