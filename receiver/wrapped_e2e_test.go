package receiver_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	twoctwop "github.com/webhookd/webhookd/providers/2c2p"
	"github.com/webhookd/webhookd/providers/braintree"
)

// End-to-end tests of events wrapped in what the signature covers
// (Braintree's form of base64 XML, 2C2P's JWT body), on the harness of
// receiver_test.go:
// forwarded once with the contract's headers, a resend replayed, tampering
// 401 and unusable keys 400 with the store untouched, a rotation's old key
// accepted.

// fourthWaveGo is one gateway and what its end-to-end test needs.
type fourthWaveGo struct {
	name        string
	build       func(t *testing.T, keys ...string) providers.Provider
	keys        [2]string // the new (replay signs with it) and the old
	fixture     string
	contentType string
	// resend returns the body as the gateway may send the event again,
	// before signing: the same event, replayed.
	resend func(t *testing.T, body []byte) []byte
	// forgeries are signed bodies changed without signing again, or
	// refused before any HMAC: each is 401.
	forgeries func(t *testing.T, signed []byte) map[string][]byte
	// unusable are bodies the gateway could sign whose event key cannot
	// be read one way: each, signed, is 400.
	unusable func(t *testing.T, body []byte) map[string][]byte
	// change, when the key is not a digest of the payload, returns the
	// same event with another amount: 422.
	change func(t *testing.T, body []byte) []byte
}

var fourthWaveGoGateways = []fourthWaveGo{
	{
		name: braintree.Name,
		build: func(t *testing.T, keys ...string) providers.Provider {
			a, err := braintree.New(keys)
			require.NoError(t, err)
			return a
		},
		keys:        [2]string{"e2e_public_new:e2e_private_new", "e2e_public_old:e2e_private_old"},
		fixture:     "subscription_charged_successfully.json",
		contentType: braintree.ContentType,
		// braintree_node's encoding of the same notification: one line.
		resend: func(t *testing.T, body []byte) []byte {
			return btPayload(t, body, func(p string) string { return strings.ReplaceAll(p, "\n", "") + "\n" })
		},
		forgeries: func(t *testing.T, signed []byte) map[string][]byte {
			return map[string][]byte{
				"payload byte changed":   btPayload(t, signed, func(p string) string { return "X" + p[1:] }),
				"a raw + in the payload": bytes.Replace(signed, []byte("%2B"), []byte("+"), 1),
				"no signature":           btWithout(t, signed, braintree.FieldSignature),
			}
		},
		unusable: func(t *testing.T, body []byte) map[string][]byte {
			const doc = `<notification><kind>%s</kind><subject/></notification>`
			enc := func(kind string) []byte {
				xml := strings.Replace(doc, "%s", kind, 1)
				return []byte("bt_payload=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(xml))+"\n"))
			}
			return map[string][]byte{
				"kind holding the key's separator": enc("subscription:charged"),
				"not a notification":               []byte("bt_payload=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("<html/>")))),
				"payload given twice":              append(bytes.Clone(body), "&BT_PAYLOAD=QUFB"...),
			}
		},
	},
	{
		name: twoctwop.Name,
		build: func(t *testing.T, keys ...string) providers.Provider {
			a, err := twoctwop.New(keys)
			require.NoError(t, err)
			return a
		},
		keys:        [2]string{"e2e-2c2p-secret-new", "e2e-2c2p-secret-old"},
		fixture:     "card_success.json",
		contentType: twoctwop.ContentType,
		// The same claims in another order (encoding/json sorts them).
		resend: func(t *testing.T, body []byte) []byte {
			return c2pClaims(t, body, func(c string) string {
				var claims map[string]any
				require.NoError(t, json.Unmarshal([]byte(c), &claims))
				sorted, err := json.Marshal(claims)
				require.NoError(t, err)
				return string(sorted)
			})
		},
		forgeries: func(t *testing.T, signed []byte) map[string][]byte {
			none := c2pToken(t, signed, func(h, c, s string) string {
				return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + c + "."
			})
			return map[string][]byte{
				"claims changed": c2pClaims(t, signed, func(c string) string { return strings.Replace(c, "230.87", "1230.87", 1) }),
				"alg none":       none,
				"no payload":     []byte(`{}`),
			}
		},
		unusable: func(t *testing.T, body []byte) map[string][]byte {
			return map[string][]byte{
				"invoiceNo holding the key's separator": c2pClaims(t, body, func(c string) string {
					return strings.Replace(c, `"invoiceNo":"INV-240301-0001"`, `"invoiceNo":"INV:240301-0001"`, 1)
				}),
				"no respCode": c2pClaims(t, body, func(c string) string { return strings.Replace(c, `"respCode"`, `"code"`, 1) }),
			}
		},
		change: func(t *testing.T, body []byte) []byte {
			return c2pClaims(t, body, func(c string) string { return strings.Replace(c, "230.87", "1230.87", 1) })
		},
	},
}

func TestFourthWaveGoGatewaysEndToEnd(t *testing.T) {
	for _, g := range fourthWaveGoGateways {
		t.Run(g.name, func(t *testing.T) {
			// A rotation: the new key first (replay signs with it), the old
			// one still accepted.
			h := newHarness(t, withProviders(g.build(t, g.keys[0], g.keys[1])))
			sender, oldSender := g.build(t, g.keys[0]), g.build(t, g.keys[1])
			body := fixture(t, g.name, g.fixture)
			sign := func(p providers.Provider, b []byte) providers.Delivery {
				t.Helper()
				d, err := providers.Sign(p, b)
				require.NoError(t, err)
				return d
			}
			first := sign(sender, body)
			items, err := sender.Parse(first)
			require.NoError(t, err)
			require.Len(t, items, 1)
			ev := items[0].Event
			key := g.name + ":" + ev.Key

			t.Run("forwarded once with the contract's headers, resend replayed", func(t *testing.T) {
				r := h.sendDelivery(g.name, first)
				require.Less(t, r.status, 300, r.body)
				require.EqualValues(t, 1, h.down.calls.Load())
				got := h.down.got[0]
				require.Equal(t, key, got.Header.Get("Idempotency-Key"))
				require.Equal(t, g.name, got.Header.Get("Webhook-Provider"))
				require.Equal(t, ev.Key, got.Header.Get("Webhook-Event-Id"))
				require.Equal(t, ev.Type, got.Header.Get("Webhook-Event-Type"))
				require.Equal(t, g.contentType, got.Header.Get("Content-Type"))
				require.Equal(t, first.Body, h.down.bodies[0], "the body, byte for byte")
				require.Equal(t, dedupe.Completed, h.state(key))

				for name, d := range map[string]providers.Delivery{
					"signed again":         sign(sender, body),
					"sent again as it was": first,
					"re-encoded":           sign(sender, g.resend(t, body)),
				} {
					again := h.sendDelivery(g.name, d)
					require.Equal(t, r.status, again.status, name)
					require.Equal(t, "true", again.header.Get("Idempotent-Replayed"), name)
				}
				require.EqualValues(t, 1, h.down.calls.Load(), "a resend is not forwarded again")
			})

			t.Run("forged or unsigned is 401, store untouched", func(t *testing.T) {
				before, recs := h.down.calls.Load(), len(h.records())
				fresh := fixture(t, g.name, g.fixture)
				other := sign(g.build(t, strings.Replace(g.keys[0], "new", "nobody", 2)), fresh)
				cases := g.forgeries(t, sign(sender, fresh).Body)
				cases["a key nobody configured"] = other.Body
				for name, b := range cases {
					r := h.sendDelivery(g.name, providers.Delivery{Header: http.Header{"Content-Type": {g.contentType}}, Body: b})
					require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", name, r.body)
					require.Equal(t, "webhookd", r.header.Get("Webhook-Rejected-By"), name)
				}
				require.Equal(t, before, h.down.calls.Load())
				require.Len(t, h.records(), recs)
			})

			t.Run("an event key that cannot be read one way is 400, store untouched", func(t *testing.T) {
				before, recs := h.down.calls.Load(), len(h.records())
				for name, b := range g.unusable(t, body) {
					d, err := providers.Sign(sender, b)
					if err != nil {
						d = providers.Delivery{Header: first.Header, Body: b}
					}
					r := h.sendDelivery(g.name, d)
					require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
				}
				require.Equal(t, before, h.down.calls.Load())
				require.Len(t, h.records(), recs)
			})

			t.Run("another payload under the same key is 422", func(t *testing.T) {
				if g.change == nil {
					t.Skip("the key is a digest of the payload: another payload is another event")
				}
				before := h.down.calls.Load()
				r := h.sendDelivery(g.name, sign(sender, g.change(t, body)))
				require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
				require.Equal(t, before, h.down.calls.Load())
			})

			t.Run("rotation: signed with the old key is forwarded", func(t *testing.T) {
				before := h.down.calls.Load()
				next := fixture(t, g.name, nextFixture[g.name])
				r := h.sendDelivery(g.name, sign(oldSender, next))
				require.Less(t, r.status, 300, r.body)
				require.Equal(t, before+1, h.down.calls.Load())
			})
		})
	}
}

// nextFixture is another event of each gateway, for the rotation check.
var nextFixture = map[string]string{braintree.Name: "dispute_opened.json", twoctwop.Name: "qr_pending.json"}

// btPayload returns a Braintree form with f applied to its bt_payload
// value (unescaped), every other byte as it was.
func btPayload(t *testing.T, body []byte, f func(string) string) []byte {
	t.Helper()
	v, err := url.ParseQuery(string(body))
	require.NoError(t, err)
	p := v.Get(braintree.FieldPayload)
	require.NotEmpty(t, p)
	out := bytes.Replace(body, []byte(url.QueryEscape(p)), []byte(url.QueryEscape(f(p))), 1)
	require.NotEqual(t, body, out)
	return out
}

// btWithout returns a Braintree form without the field name.
func btWithout(t *testing.T, body []byte, name string) []byte {
	t.Helper()
	var kept []string
	for _, pair := range strings.Split(string(body), "&") {
		if !strings.HasPrefix(pair, name+"=") {
			kept = append(kept, pair)
		}
	}
	return []byte(strings.Join(kept, "&"))
}

var c2pPayload = regexp.MustCompile(`("payload"\s*:\s*")([^".]*)\.([^".]*)\.([^"]*)"`)

// c2pToken returns a 2C2P body whose token f rewrites from its three
// segments, every other byte as it was.
func c2pToken(t *testing.T, body []byte, f func(header, claims, sig string) string) []byte {
	t.Helper()
	m := c2pPayload.FindSubmatchIndex(body)
	require.NotNil(t, m, "a {\"payload\":...} body")
	seg := func(i int) string { return string(body[m[2*i]:m[2*i+1]]) }
	out := append(append(bytes.Clone(body[:m[3]]), f(seg(2), seg(3), seg(4))...), body[m[1]-1:]...)
	return out
}

// c2pClaims returns a 2C2P body with f applied to its token's claims
// (JSON text), the header and the now stale signature kept.
func c2pClaims(t *testing.T, body []byte, f func(string) string) []byte {
	t.Helper()
	return c2pToken(t, body, func(h, c, s string) string {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		require.NoError(t, err)
		changed := f(string(raw))
		require.NotEqual(t, string(raw), changed)
		return h + "." + base64.RawURLEncoding.EncodeToString([]byte(changed)) + "." + s
	})
}
