package receiver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
)

// TestDependency: each 503 names the dependency the alert rules page on
// (deploy/alerts.yml); the rest name none.
func TestDependency(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ErrDownstreamUnavailable, DependencyCore},
		{fmt.Errorf("%w: paypal certificate fetch: 502", providers.ErrUnavailable), DependencyProviderAPI},
		{fmt.Errorf("%w: disk full", dedupe.ErrUnavailable), DependencyStore},
		{dedupe.ErrClosed, DependencyStore},
		{ErrStoreUnavailable, DependencyStore},
		{ErrShuttingDown, ""},
		{ErrBatchTimeout, ""},
		{providers.ErrUnauthorized, ""},
		{errors.New("anything else"), ""},
		{nil, ""},
	} {
		require.Equal(t, tc.want, dependency(tc.err), "%v", tc.err)
		if tc.want != "" {
			status, out := classify(tc.err)
			require.Equal(t, 503, status, "%v", tc.err)
			require.Equal(t, OutcomeUnavailable, out)
		}
	}
}
