package sink

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
)

// TestHeadersAreWhatDispatchSets ties Headers to dispatch's one definition
// of a forward's headers, so that the sink prints every header webhookd
// adds for the core service (its User-Agent aside, the same on every
// forward).
func TestHeadersAreWhatDispatchSets(t *testing.T) {
	h := http.Header{}
	dispatch.NewRequest(dedupe.Key{Source: "stripe", Event: "evt_1"}, "", "charge.failed", "application/json", nil).SetHeaders(h)
	h.Del("User-Agent")
	require.Equal(t, slices.Sorted(slices.Values(Headers)), slices.Sorted(maps.Keys(h)))
}
