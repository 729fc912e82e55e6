package twoctwop_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	twoctwop "github.com/webhookd/webhookd/providers/2c2p"
	"github.com/webhookd/webhookd/providers/providertest"
)

func kit() providertest.Kit {
	return providertest.Kit{
		New: func(keys []string, _ func() time.Time) (providers.Provider, error) {
			return twoctwop.New(keys)
		},
		Secrets:  [2]string{"conformance_secret_key_a", "conformance_secret_key_b"},
		Fixtures: fixtures,
		// The token is both the signature and what it signs.
		SignatureField: twoctwop.FieldPayload,
		SignedFields:   []string{twoctwop.FieldPayload},
		// A retry may serialise the claims in another order, and carry a
		// claim 2C2P added since.
		Retry:  inClaims(providertest.Chain(providertest.Reordered, providertest.WithMember("addedLater", `"1"`))),
		Change: inClaims(providertest.ChangeAmount("amount")),
		SelfDerived: "2C2P publishes one token with its key, the JWT guide's (TestGuideTokenVerifies), a request token without " +
			"respCode, so it verifies but has no event key; the backend response page's token is signed with another merchant's key.",
	}
}

// TestConformance runs the kit's properties one by one: the body's one
// member is the token, which is both the signature and what it signs, so
// UnsignedFieldsInert has no unsigned field to change.
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
		{"DuplicateFieldsRefused", k.DuplicateFieldsRefused},
		{"KeyStableAcrossRetries", k.KeyStableAcrossRetries},
		{"ChangedPayloadChangesFingerprint", k.ChangedPayloadChangesFingerprint},
	}
	keys := map[string]string{}
	a := newAdapter(t, "k")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		t.Run(filepath.Base(p), func(t *testing.T) {
			for _, prop := range properties {
				t.Run(prop.name, func(t *testing.T) { prop.run(t, b) })
			}
		})
		// DistinctEventsDistinct, which Run alone calls.
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: b}))
		require.NoError(t, err)
		require.NotContains(t, keys, ev.Key, "%s and %s share a key", keys[ev.Key], p)
		keys[ev.Key] = p
	}
}

var payloadRE = regexp.MustCompile(`("payload"\s*:\s*")([^".]+)\.([^".]+)\.([^"]*)"`)

// inClaims applies f to the claims of a fixture's token, keeping its
// header and (now stale) signature: Sign signs the claims again.
func inClaims(f func([]byte) []byte) func([]byte) []byte {
	return func(body []byte) []byte {
		return payloadRE.ReplaceAllFunc(body, func(m []byte) []byte {
			g := payloadRE.FindSubmatch(m)
			claims, err := base64.RawURLEncoding.DecodeString(string(g[3]))
			if err != nil {
				return m
			}
			changed := base64.RawURLEncoding.EncodeToString(f(claims))
			return []byte(string(g[1]) + string(g[2]) + "." + changed + "." + string(g[4]) + `"`)
		})
	}
}

func TestInClaimsChangesEveryFixture(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotEqual(t, string(b), string(kit().Retry(b)), p)
		require.NotEqual(t, string(b), string(kit().Change(b)), p)
		require.True(t, strings.HasPrefix(string(b), `{"payload": "`), p)
	}
}
