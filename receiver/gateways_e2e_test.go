package receiver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/receiver"
)

// End-to-end tests for the eleven gateways served by built-in provider
// specs (docs/providers/README.md), on the harness of receiver_test.go:
// each is built from its variables as `webhookd serve` builds it.

// e2eGateway is one built-in spec and what its end-to-end test needs.
type e2eGateway struct {
	name     string
	settings map[string]string
	// bodySigned is false for Mercado Pago (a signed manifest) and
	// Flutterwave (a token): their forgeries change a signed header or
	// query value instead of the body.
	bodySigned bool
	forge      func(header http.Header, query url.Values)
	// batch is the member whose elements are each one event.
	batch string
	// change, for a gateway keyed by an event id (or, for Mercado Pago, by
	// its signed manifest), returns the same event with what it says
	// happened changed: 422, never forwarded.
	change func([]byte) []byte
}

var e2eGateways = []e2eGateway{
	{name: "square", bodySigned: true, settings: map[string]string{"NOTIFICATION_URL": "https://pay.example.com/webhooks/square"}, change: moreMoney},
	{name: "checkout", bodySigned: true, change: moreMoney},
	{name: "shopify", bodySigned: true},
	{name: "gocardless", bodySigned: true, batch: "events", change: func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"origin": "`), []byte(`"origin": "x`), 1)
	}},
	{name: "mollie", bodySigned: true, change: func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"entityId": "`), []byte(`"entityId": "x`), 1)
	}},
	{name: "coinbase", bodySigned: true, change: moreMoney},
	{name: "lemonsqueezy", bodySigned: true},
	{name: "airwallex", bodySigned: true, change: moreMoney},
	{name: "mercadopago", forge: func(_ http.Header, q url.Values) { q.Set("data.id", q.Get("data.id")+"1") },
		// The key is the signed manifest's; another body under it is 422.
		change: func(b []byte) []byte { return bytes.Replace(b, []byte(`"type":"`), []byte(`"type":"x`), 1) }},
	{name: "paystack", bodySigned: true},
	{name: "flutterwave", forge: func(h http.Header, _ url.Values) { h.Set("verif-hash", "not-the-secret-hash") }},
}

// moreMoney puts a 1 before the digits of the first amount, a number or a
// string.
func moreMoney(b []byte) []byte {
	if bytes.Contains(b, []byte(`"amount": "`)) {
		return bytes.Replace(b, []byte(`"amount": "`), []byte(`"amount": "1`), 1)
	}
	return bytes.Replace(b, []byte(`"amount": `), []byte(`"amount": 1`), 1)
}

// builtinSpec returns the built-in spec called name.
func builtinSpec(t *testing.T, name string) *spec.Spec {
	t.Helper()
	specs, err := spec.Builtin()
	require.NoError(t, err)
	i := slices.IndexFunc(specs, func(s *spec.Spec) bool { return s.Name() == name })
	require.GreaterOrEqual(t, i, 0, "no built-in spec %s", name)
	return specs[i]
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

func TestGatewaysEndToEnd(t *testing.T) {
	for _, g := range e2eGateways {
		t.Run(g.name, func(t *testing.T) {
			s := builtinSpec(t, g.name)
			newSecret, oldSecret := g.name+"-e2e-secret-new", g.name+"-e2e-secret-old"
			// A rotation: the new secret first (replay signs with it), the
			// old one still accepted.
			h := newHarness(t, withProviders(buildGateway(t, s, g.settings, newSecret, oldSecret)))
			paths := gatewayFixtures(t, g.name)
			first, err := os.ReadFile(paths[0])
			require.NoError(t, err)
			second, err := os.ReadFile(paths[1])
			require.NoError(t, err)

			t.Run("forwarded once with the contract's headers, resend replayed", func(t *testing.T) {
				d := signedDelivery(t, s, g.settings, newSecret, first)
				events := eventsOf(t, s, g.settings, d)
				r := h.sendDelivery(g.name, d)
				require.Less(t, r.status, 300, r.body)
				require.EqualValues(t, len(events), h.down.calls.Load(), "one forward per event")
				for i, ev := range events {
					got := h.down.got[i]
					require.Equal(t, g.name+":"+ev.Key, got.Header.Get("Idempotency-Key"))
					require.Equal(t, g.name, got.Header.Get("Webhook-Provider"))
					require.Equal(t, ev.Key, got.Header.Get("Webhook-Event-Id"))
					require.Equal(t, ev.Type, got.Header.Get("Webhook-Event-Type"))
					require.Equal(t, ev.Body, h.down.bodies[i], "the event's body, byte for byte")
					require.Equal(t, dedupe.Completed, h.state(g.name+":"+ev.Key))
				}
				if g.batch == "" {
					require.Equal(t, first, h.down.bodies[0])
				}

				// The gateway's retry: the same body, signed again.
				again := h.sendDelivery(g.name, signedDelivery(t, s, g.settings, newSecret, first))
				require.Equal(t, r.status, again.status)
				if g.batch == "" {
					require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
				}
				require.EqualValues(t, len(events), h.down.calls.Load(), "a resend is not forwarded again")
			})

			// Where the key is a digest of the body, another body is
			// another event: the check does not apply, and is not run.
			if g.change != nil {
				t.Run("another body under a used event id is 422", func(t *testing.T) {
					before := h.down.calls.Load()
					changed := g.change(first)
					require.NotEqual(t, first, changed)
					d := signedDelivery(t, s, g.settings, newSecret, changed)
					if !g.bodySigned {
						// A genuine signature sent again with another body.
						d = signedDelivery(t, s, g.settings, newSecret, first)
						d.Body = changed
					}
					r := h.sendDelivery(g.name, d)
					require.Equal(t, http.StatusUnprocessableEntity, r.status, r.body)
					require.Equal(t, before, h.down.calls.Load())
				})
			}

			t.Run("tampered or unsigned is 401, store untouched", func(t *testing.T) {
				before, recs := h.down.calls.Load(), len(h.records())
				d := signedDelivery(t, s, g.settings, newSecret, second)
				if g.bodySigned {
					tampered := d
					tampered.Body = bytes.Replace(second, []byte(`"`), []byte(`" `), 1)
					require.NotEqual(t, second, tampered.Body)
					require.Equal(t, http.StatusUnauthorized, h.sendDelivery(g.name, tampered).status, "body changed")
				}
				if g.forge != nil {
					forged := providers.Delivery{Header: d.Header.Clone(), Query: url.Values{}, Body: second}
					for k, v := range d.Query {
						forged.Query[k] = slices.Clone(v)
					}
					g.forge(forged.Header, forged.Query)
					require.Equal(t, http.StatusUnauthorized, h.sendDelivery(g.name, forged).status, "signed part changed")
				}
				stranger := signedDelivery(t, s, g.settings, "a-secret-nobody-configured", second)
				require.Equal(t, http.StatusUnauthorized, h.sendDelivery(g.name, stranger).status, "wrong secret")
				unsigned := providers.Delivery{Header: http.Header{"Content-Type": {"application/json"}}, Query: d.Query, Body: second}
				require.Equal(t, http.StatusUnauthorized, h.sendDelivery(g.name, unsigned).status, "no signature")
				require.Equal(t, before, h.down.calls.Load())
				require.Len(t, h.records(), recs)
			})

			t.Run("rotation: signed with the old secret is forwarded", func(t *testing.T) {
				before := h.down.calls.Load()
				d := signedDelivery(t, s, g.settings, oldSecret, second)
				events := eventsOf(t, s, g.settings, d)
				r := h.sendDelivery(g.name, d)
				require.Less(t, r.status, 300, r.body)
				require.EqualValues(t, before+int32(len(events)), h.down.calls.Load())
				// The new secret signs the same event: replayed.
				again := h.sendDelivery(g.name, signedDelivery(t, s, g.settings, newSecret, second))
				require.Less(t, again.status, 300, again.body)
				require.EqualValues(t, before+int32(len(events)), h.down.calls.Load())
			})
		})
	}
}

// TestGoCardlessBatchEdges: one genuine request whose batch repeats an
// element forwards it once; an empty batch or one longer than
// spec.MaxBatch is 400 and stores nothing.
func TestGoCardlessBatchEdges(t *testing.T) {
	s := builtinSpec(t, "gocardless")
	const secret = "gc-edges-secret"
	h := newHarness(t, withProviders(buildGateway(t, s, nil, secret)), func(h *harness) {
		h.config = func(c *receiver.Config) { c.MaxBodyBytes = 1 << 20 }
	})
	ev := `{"id":"EV_EDGE_1","resource_type":"payments","action":"confirmed","links":{"payment":"PM1"}}`

	r := h.sendDelivery("gocardless", signedDelivery(t, s, nil, secret, []byte(`{"events":[`+ev+`,`+ev+`]}`)))
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.EqualValues(t, 1, h.down.calls.Load(), "the repeat is replayed, not forwarded")
	require.Equal(t, dedupe.Completed, h.state("gocardless:EV_EDGE_1"))

	recs := len(h.records())
	huge := `{"events":[` + strings.Repeat(`{"id":"E2"},`, spec.MaxBatch) + `{"id":"E3"}]}`
	for name, body := range map[string]string{"empty": `{"events":[]}`, "longer than MaxBatch": huge} {
		r := h.sendDelivery("gocardless", signedDelivery(t, s, nil, secret, []byte(body)))
		require.Equal(t, http.StatusBadRequest, r.status, name)
	}
	require.EqualValues(t, 1, h.down.calls.Load())
	require.Len(t, h.records(), recs)
}
