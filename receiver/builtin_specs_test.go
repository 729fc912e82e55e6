package receiver_test

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

// The built-in provider specs for the receiver's tests, each built from its
// variables as `webhookd serve` builds it. Every built-in provider's
// forwarding, replay, 422 and 401 are cmd/webhookd's provider suite
// (cmd/webhookd/providers_e2e_test.go); the tests here are of what the receiver does
// with one provider's deliveries.

// builtinSpec returns the built-in spec called name.
func builtinSpec(t *testing.T, name string) *spec.Spec {
	t.Helper()
	s, err := spec.BuiltinNamed(name)
	require.NoError(t, err)
	return s
}

// buildGateway builds s's provider from its variables, as the command
// does: the secrets' list, then the settings.
func buildGateway(t *testing.T, s *spec.Spec, settings map[string]string, secrets ...string) providers.Provider {
	t.Helper()
	st := s.Entry().Settings().(*spec.Settings)
	for i, v := range st.Variables() {
		if i == 0 {
			require.NoError(t, v.Set(strings.Join(secrets, ",")))
			continue
		}
		for name, value := range settings {
			if strings.HasSuffix(v.Name, "_"+name) {
				require.NoError(t, v.Set(value))
			}
		}
	}
	p, err := st.Build()
	require.NoError(t, err)
	require.NotNil(t, p)
	return p
}

// gatewayFixtures returns the paths of fixtures/<name>/*.json, sorted.
func gatewayFixtures(t *testing.T, name string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "fixtures", name, "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), 2, "fixtures/%s", name)
	return paths
}

// sendDelivery posts a spec delivery (headers, query, body) to the
// provider's route.
func (h *harness) sendDelivery(provider string, d providers.Delivery) reply {
	h.t.Helper()
	u := h.srv.URL + "/webhooks/" + provider
	if len(d.Query) > 0 {
		u += "?" + d.Query.Encode()
	}
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(d.Body))
	require.NoError(h.t, err)
	for k, v := range d.Header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// signedDelivery signs body with secret as the gateway would.
func signedDelivery(t *testing.T, s *spec.Spec, settings map[string]string, secret string, body []byte) providers.Delivery {
	t.Helper()
	p, err := s.New([]string{secret}, settings, nil)
	require.NoError(t, err)
	d, err := p.Sign(body)
	require.NoError(t, err)
	return d
}

// eventsOf returns the events a delivery carries, as the spec derives
// them.
func eventsOf(t *testing.T, s *spec.Spec, settings map[string]string, d providers.Delivery) []providers.Item {
	t.Helper()
	p, err := s.New([]string{"any"}, settings, nil)
	require.NoError(t, err)
	items, err := p.Parse(d)
	require.NoError(t, err)
	return items
}
