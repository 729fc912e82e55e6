package braintree_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/braintree"
	"github.com/webhookd/webhookd/providers/providertest"
)

const fixtures = "../../fixtures/braintree"

// mime encodes doc as braintree_python does: 76 characters a line, each
// line ended by a line feed.
func mime(doc string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(doc))
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	return b.String() + enc + "\n"
}

// signed returns a delivery of doc signed with the SDK's keys.
func signed(t *testing.T, payload string) providers.Delivery {
	t.Helper()
	return providers.Delivery{Body: form(sdkPublic+"|"+braintree.Signature(sdkPrivate, []byte(payload)), payload)}
}

func parse(t *testing.T, payload string) (providers.Event, error) {
	t.Helper()
	return providertest.OneEvent(newAdapter(t, sdkKeys).Parse(signed(t, payload)))
}

func TestParse(t *testing.T) {
	const doc = `<notification><timestamp type="datetime">2024-01-01T00:00:00Z</timestamp><kind>subscription_went_past_due</kind><subject><subscription><id>s1</id></subscription></subject></notification>`
	tests := []struct {
		name    string
		payload string
		kind    string // "" when refused with err
		err     error
	}{
		{"one line", base64.StdEncoding.EncodeToString([]byte(doc)), "subscription_went_past_due", nil},
		{"MIME lines", mime(doc), "subscription_went_past_due", nil},
		{"white space around and a declaration", mime("<?xml version=\"1.0\"?>\n  " + strings.Replace(doc, "<kind>subscription_went_past_due</kind>", "<kind>\n check \n</kind>", 1) + "\n"), "check", nil},
		{"not base64", "QUJD\nRA", "", braintree.ErrNotNotification},
		{"padding bits set", "QR==", "", braintree.ErrNotNotification},
		{"not XML", mime("subscription_went_past_due"), "", braintree.ErrNotNotification},
		{"another root", mime(strings.ReplaceAll(doc, "notification>", "notice>")), "", braintree.ErrNotNotification},
		{"a second root", mime(doc + "<notification><kind>check</kind></notification>"), "", braintree.ErrNotNotification},
		{"text after the root", mime(doc + "x"), "", braintree.ErrNotNotification},
		{"unclosed", mime(strings.TrimSuffix(doc, "</notification>")), "", braintree.ErrNotNotification},
		{"mismatched end tag", mime(strings.Replace(doc, "</subject>", "</subjet>", 1)), "", braintree.ErrNotNotification},
		{"document type declaration", mime(`<!DOCTYPE notification [<!ENTITY k "check">]>` + strings.Replace(doc, "subscription_went_past_due", "&k;", 1)), "", braintree.ErrNotNotification},
		// A core's XML parser could read a DTD's defaults or entities
		// that encoding/xml ignores: no DTD at all.
		{"document type declaration alone", mime(`<!DOCTYPE notification SYSTEM "x.dtd">` + doc), "", braintree.ErrNotNotification},
		{"unknown entity", mime(strings.Replace(doc, "subscription_went_past_due", "&k;", 1)), "", braintree.ErrNotNotification},
		{"too deep", mime("<notification><kind>check</kind>" + strings.Repeat("<a>", braintree.MaxDepth) + strings.Repeat("</a>", braintree.MaxDepth) + "</notification>"), "", braintree.ErrNotNotification},
		{"namespaced root", mime(`<x:notification xmlns:x="urn:x"><kind>check</kind></x:notification>`), "", braintree.ErrNotNotification},
		{"no kind", mime(strings.Replace(doc, "<kind>subscription_went_past_due</kind>", "", 1)), "", braintree.ErrNoKind},
		{"kind only deeper", mime(`<notification><subject><kind>check</kind></subject></notification>`), "", braintree.ErrNoKind},
		{"two kinds", mime(strings.Replace(doc, "<kind>", "<kind>check</kind><kind>", 1)), "", braintree.ErrNoKind},
		{"empty kind", mime(strings.Replace(doc, "subscription_went_past_due", "", 1)), "", braintree.ErrNoKind},
		// The key splits back one way: kind:digest.
		{"kind holding the separator", mime(strings.Replace(doc, "subscription_went_past_due", "a:b", 1)), "", braintree.ErrNoKind},
		{"kind holding a space", mime(strings.Replace(doc, "subscription_went_past_due", "a b", 1)), "", braintree.ErrNoKind},
		{"kind holding an element", mime(strings.Replace(doc, "subscription_went_past_due", "a<b/>", 1)), "", braintree.ErrNoKind},
		{"kind too long", mime(strings.Replace(doc, "subscription_went_past_due", strings.Repeat("k", braintree.MaxKindBytes+1), 1)), "", braintree.ErrNoKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := parse(t, tt.payload)
			if tt.kind == "" {
				require.ErrorIs(t, err, tt.err)
				require.ErrorIs(t, err, providers.ErrMalformed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.kind, ev.Type)
			require.True(t, strings.HasPrefix(ev.Key, tt.kind+":"), ev.Key)
			require.Len(t, ev.Fingerprint, 64)
			require.Equal(t, tt.kind+":"+ev.Fingerprint, ev.Key)
		})
	}
}

// TestKeyIgnoresLineBreaks: the SDKs encode one document two ways; its
// key, type and fingerprint are the same.
func TestKeyIgnoresLineBreaks(t *testing.T) {
	doc := strings.Repeat(`<notification><kind>check</kind><subject><check type="boolean">true</check></subject></notification>`, 1)
	one, err := parse(t, base64.StdEncoding.EncodeToString([]byte(doc))+"\n")
	require.NoError(t, err)
	lines, err := parse(t, mime(doc))
	require.NoError(t, err)
	require.Equal(t, one, lines)
	other, err := parse(t, mime(strings.Replace(doc, "true", "false", 1)))
	require.NoError(t, err)
	require.NotEqual(t, one.Key, other.Key, "another payload is another event")
}

func TestFixturesParse(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), providertest.MinFixtures)
	a := newAdapter(t, sdkKeys)
	for _, p := range paths {
		body, err := os.ReadFile(p)
		require.NoError(t, err)
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		require.NoError(t, err, p)
		require.Equal(t, strings.TrimSuffix(filepath.Base(p), ".json"), ev.Type, "each fixture is named after its kind")
	}
}
