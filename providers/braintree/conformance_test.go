package braintree_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/braintree"
	"github.com/webhookd/webhookd/providers/providertest"
)

func kit() providertest.Kit {
	return providertest.Kit{
		New: func(keys []string, _ func() time.Time) (providers.Provider, error) {
			return braintree.New(keys)
		},
		Secrets:        [2]string{"conformance_public_a:conformance_private_a", "conformance_public_b:conformance_private_b"},
		Fixtures:       fixtures,
		Format:         providertest.Form,
		SignatureField: braintree.FieldSignature,
		// A retry as another SDK or framework may post it: the payload's
		// lines broken the other way, the fields in the other order.
		Retry: providertest.Chain(rewrapPayload, providertest.FormReordered),
		SelfDerived: "Braintree's SDKs publish no fixed notification: their tests sign fresh, timestamped payloads " +
			"(braintree_python tests/unit/test_webhooks.py). The signature primitive is checked against the SDKs' one fixed vector, " +
			"the challenge answer (TestSignatureIsTheSDKsChallengeAnswer, TestSDKVectorVerifies), and a self-derived notification " +
			"signed with the SDKs' keys by TestSelfDerivedNotification.",
	}
}

// TestConformance runs the kit's properties one by one, as the spec kit
// does for gateways keyed by a digest of the body: ChangedPayloadChangesFingerprint
// does not apply, since another payload is another event (the key is
// kind + the SHA-256 of the decoded XML), so the receiver's 422 cannot
// fire and a changed payload is forwarded as new (docs/providers/braintree.md).
func TestConformance(t *testing.T) {
	k := kit()
	t.Run("PublishedExample", k.PublishedExample)
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), providertest.MinFixtures)
	properties := []struct {
		name string
		run  func(*testing.T, []byte)
	}{
		{"SignedVerifies", k.SignedVerifies},
		{"TamperedRefused", k.TamperedRefused},
		{"Rotation", k.Rotation},
		{"UnsignedFieldsInert", k.UnsignedFieldsInert},
		{"DuplicateFieldsRefused", k.DuplicateFieldsRefused},
		{"KeyStableAcrossRetries", k.KeyStableAcrossRetries},
	}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		t.Run(filepath.Base(p), func(t *testing.T) {
			for _, prop := range properties {
				t.Run(prop.name, func(t *testing.T) { prop.run(t, body) })
			}
		})
	}
}

// rewrapPayload re-encodes bt_payload with the other SDK's line breaks:
// MIME lines (braintree_python) become one line and a final line feed
// (braintree_node), and the reverse.
func rewrapPayload(body []byte) []byte {
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return body
	}
	payload := v.Get(braintree.FieldPayload)
	joined := strings.ReplaceAll(payload, "\n", "")
	var next string
	if strings.Count(payload, "\n") > 1 {
		next = joined + "\n"
	} else {
		for len(joined) > 76 {
			next += joined[:76] + "\n"
			joined = joined[76:]
		}
		next += joined + "\n"
	}
	return []byte(strings.Replace(string(body), url.QueryEscape(payload), url.QueryEscape(next), 1))
}

func TestRewrapChangesEveryFixture(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotEqual(t, string(body), string(rewrapPayload(body)), p)
	}
}

// TestDistinctFixturesDistinct is the kit's DistinctEventsDistinct, which
// Run alone calls.
func TestDistinctFixturesDistinct(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	a := newAdapter(t, sdkKeys)
	seen := map[string]string{}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		require.NoError(t, err)
		require.NotContains(t, seen, ev.Key, "%s and %s share a key", seen[ev.Key], p)
		seen[ev.Key] = p
	}
}
