package twoctwop_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	twoctwop "github.com/webhookd/webhookd/providers/2c2p"
	"github.com/webhookd/webhookd/providers/providertest"
)

const fixtures = "../../fixtures/2c2p"

const hs256 = `{"alg":"HS256","typ":"JWT"}`

func TestParse(t *testing.T) {
	tests := []struct {
		name, claims string
		key, typ     string // key "" when refused with err
		err          error
	}{
		{"with tranRef", `{"invoiceNo":"280520075921","tranRef":"2868821","respCode":"0000","amount":"230.87"}`, "280520075921:0000:2868821", "0000", nil},
		{"without tranRef", `{"invoiceNo":"280520075921","respCode":"0001"}`, "280520075921:0001", "0001", nil},
		{"empty tranRef", `{"invoiceNo":"280520075921","respCode":"0001","tranRef":""}`, "280520075921:0001", "0001", nil},
		{"null tranRef", `{"invoiceNo":"280520075921","respCode":"0001","tranRef":null}`, "280520075921:0001", "0001", nil},
		{"numbers as written", `{"invoiceNo":1523953661,"respCode":"0000","tranRef":2868821}`, "1523953661:0000:2868821", "0000", nil},
		{"no respCode (a request token)", `{"invoiceNo":"1523953661","amount":1000}`, "", "", twoctwop.ErrNoEventKey},
		{"no invoiceNo", `{"respCode":"0000"}`, "", "", twoctwop.ErrNoEventKey},
		// The key splits back one way: "a:b" + "0000" would be "a" + "b:0000".
		{"invoiceNo holding the separator", `{"invoiceNo":"INV:1","respCode":"0000"}`, "", "", twoctwop.ErrNoEventKey},
		{"respCode holding the separator", `{"invoiceNo":"INV1","respCode":"00:00"}`, "", "", twoctwop.ErrNoEventKey},
		{"tranRef holding the separator", `{"invoiceNo":"INV1","respCode":"0000","tranRef":"1:2"}`, "", "", twoctwop.ErrNoEventKey},
		{"invoiceNo holding a space", `{"invoiceNo":"INV 1","respCode":"0000"}`, "", "", twoctwop.ErrNoEventKey},
		{"invoiceNo too long", `{"invoiceNo":"` + strings.Repeat("9", twoctwop.MaxFieldBytes+1) + `","respCode":"0000"}`, "", "", twoctwop.ErrNoEventKey},
		{"invoiceNo an object", `{"invoiceNo":{"a":1},"respCode":"0000"}`, "", "", twoctwop.ErrNoEventKey},
		{"claims not JSON", `invoiceNo=1`, "", "", twoctwop.ErrNotClaims},
		{"claims an array", `["invoiceNo"]`, "", "", twoctwop.ErrNotClaims},
		{"a claim twice", `{"invoiceNo":"A","respCode":"0000","invoiceNo":"B"}`, "", "", twoctwop.ErrNotClaims},
		{"a claim in another case too", `{"invoiceNo":"A","respCode":"0000","InvoiceNo":"B"}`, "", "", twoctwop.ErrNotClaims},
	}
	a := newAdapter(t, "k")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body(jws("k", hs256, tt.claims))}))
			if tt.key == "" {
				require.ErrorIs(t, err, tt.err)
				require.ErrorIs(t, err, providers.ErrMalformed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.key, ev.Key)
			require.Equal(t, tt.typ, ev.Type)
			require.Len(t, ev.Fingerprint, 64)
		})
	}
}

// TestFingerprint: the claims' order and a claim 2C2P adds later do not
// count; the amount does.
func TestFingerprint(t *testing.T) {
	a := newAdapter(t, "k")
	fp := func(claims string) string {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body(jws("k", hs256, claims))}))
		require.NoError(t, err)
		return ev.Fingerprint
	}
	first := fp(`{"invoiceNo":"A","respCode":"0000","amount":"10.00","tranRef":"1"}`)
	require.Equal(t, first, fp(`{"tranRef":"1","amount":"10.00","respCode":"0000","invoiceNo":"A","addedLater":true}`))
	require.NotEqual(t, first, fp(`{"invoiceNo":"A","respCode":"0000","amount":"110.00","tranRef":"1"}`))
}

func TestFixturesParse(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), providertest.MinFixtures)
	a := newAdapter(t, "k")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		_, err = providertest.OneEvent(a.Parse(providers.Delivery{Body: b}))
		require.NoError(t, err, p)
	}
}
