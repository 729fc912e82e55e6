package spec

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	fixturefile "github.com/webhookd/webhookd/providers/fixture"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/providertest"
)

// kitFixtures maps the testdata specs, which take over a Go adapter's
// scheme, to that adapter's fixtures; a built-in spec's are
// fixtures/<name>.
var kitFixtures = map[string]string{"paddle-billing": "paddle"}

// kitRetry is how a gateway's own retry differs from its first delivery,
// where it differs in more than member order.
// A Standard Webhooks sender resends the same body (nil: unchanged); a
// Xendit dashboard resend may carry a later updated, members in another
// order, and fields Xendit added since.
var kitRetry = map[string]func([]byte) []byte{"stripe": providertest.BumpPendingWebhooks, "paymongo": reindented, "standard": nil,
	"xendit": providertest.Chain(bumpUpdated, providertest.Reordered,
		providertest.WithMember("added_later", `{"note":"a field Xendit added since the first attempt"}`))}

var updated = regexp.MustCompile(`("updated"\s*:\s*)"[^"]*"`)

// bumpUpdated sets every updated timestamp in body (top-level or nested)
// to a later time.
func bumpUpdated(body []byte) []byte {
	return updated.ReplaceAll(body, []byte(`${1}"2026-12-31T23:59:59.999Z"`))
}

// reindented is a body as a serialiser that spaces its members otherwise
// sends it: PayMongo's body has one top-level member, which Reordered
// cannot move, and a retry "re-sends the original event payload".
func reindented(body []byte) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return body
	}
	return out.Bytes()
}

// kitChange is how a fixture's payload is changed where no member of
// amountNames says what happened: Mercado Pago's thin bodies carry the
// resource's id (data.id) and, for an order, its total_paid_amount.
// Xendit's payment.capture carries captured_amount, not amount.
var kitChange = map[string]func([]byte) []byte{"mercadopago": providertest.ChangeAmount("total_paid_amount", "id"),
	"xendit": providertest.ChangeAmount("amount", "captured_amount")}

// amountNames are the members ChangeAmount looks for in the fixtures.
// A thin event (Mollie's, GoCardless's) carries no amount: its creation
// time, changed, is then what it says happened.
var amountNames = []string{"amount", "amount_total", "total", "value", "amount_money", "grand_total", "subtotal",
	"charged_amount", "price", "quantity", "created_at", "createdAt", "payment_amount", "refund_amount", "paidAmount"}

// specKit is the conformance kit of s: its examples are the published
// examples, its fixtures the bodies.
func specKit(t *testing.T, s *Spec) providertest.Kit {
	t.Helper()
	dir := s.name
	if d, ok := kitFixtures[s.name]; ok {
		dir = d
	}
	settings := s.examples[0].settings
	k := providertest.Kit{
		New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
			return newTest(s, secrets, settings, now)
		},
		Secrets:  [2]string{secretFor(s, "kit-secret-a"), secretFor(s, "kit-secret-b")},
		Fixtures: "../../fixtures/" + dir,
		Retry:    providertest.Reordered,
		Change:   providertest.ChangeAmount(amountNames...),
	}
	if r, ok := kitRetry[s.name]; ok {
		k.Retry = r
	}
	if s.form {
		// The signature is a field, over some fields: the others are
		// unsigned and must leave the event alone.
		k.Format, k.SignatureField = providertest.Form, s.sig.field
		k.Retry = providertest.Chain(providertest.FormReordered, providertest.WithFormField("addedLater", "1"))
		k.Change = providertest.ChangeFormAmount("AMOUNT", "amount")
		// The joined fields are signed and never empty; a signed field
		// that may be (PayU's udf1) is varied by UnsignedFieldsInert too,
		// which a changed signed field fails, as it must.
		k.SignedFields = s.sig.joined
	}
	if c, ok := kitChange[s.name]; ok {
		k.Change = c
	}
	if !s.form && !s.sig.signed.has(bodyRef, "") {
		k.BodyUnsigned = true
		k.UnsignedKeyReason = "the spec's event key reads only what the gateway signs (docs/provider-specs.md, event.key)"
		if s.sig.alg.hash == nil {
			k.UnsignedKeyReason = "a token authenticates the sender of the whole request, not a text"
		}
	}
	for _, r := range s.key.refs() {
		if r.kind == headerRef || r.kind == queryRef || r.kind == signatureRef {
			k.Resend = func(p providers.Provider, first providers.Delivery, body []byte) (providers.Delivery, error) {
				return p.(*Provider).Resign(first, body)
			}
		}
	}
	for _, ex := range s.examples {
		e := providertest.Example{
			Source: ex.source, Secret: ex.secret, Now: ex.now,
			New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
				return newTest(s, secrets, ex.settings, now)
			},
			Delivery: providers.Delivery{Header: ex.header, Query: ex.query, Body: ex.body, Path: ex.path},
		}
		if ex.key != "" && s.batch == "" {
			e.Keys = []string{ex.key}
		}
		k.Examples = append(k.Examples, e)
	}
	return k
}

// TestKit runs the conformance kit on every built-in spec and on the
// testdata specs that take over a Go adapter's scheme. Two properties do
// not apply to some specs, and are left to TestSpecsConform:
// BatchItemsStandAlone is for items each signed inside the body (Adyen's),
// where a spec's signature covers the whole request; and a key that is a
// digest of the body (a gateway without event ids) makes any changed body
// another event, so a retry is the same body byte for byte
// (docs/providers.md says so per gateway) and KeyStableAcrossRetries and
// ChangedPayloadChangesFingerprint have nothing to change; so has a resend
// of a spec keyed by signed headers with no timestamp (Mercado Pago's).
func TestKit(t *testing.T) {
	specs, err := Builtin()
	require.NoError(t, err)
	local, err := LoadPath("testdata")
	require.NoError(t, err)
	for _, s := range append(specs, local...) {
		t.Run(s.name, func(t *testing.T) {
			k := specKit(t, s)
			t.Run("PublishedExample", k.PublishedExample)
			fixtures, err := fixturefile.Load([]string{k.Fixtures}, "")
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(fixtures), providertest.MinFixtures)
			properties := map[string]func(*testing.T, []byte){
				"SignedVerifies": k.SignedVerifies, "TamperedRefused": k.TamperedRefused, "Rotation": k.Rotation,
				"UnsignedFieldsInert": k.UnsignedFieldsInert, "DuplicateFieldsRefused": k.DuplicateFieldsRefused,
			}
			// A key from signed headers (Resend) without a timestamp:
			// a resend signs the very same text, and nothing changes.
			if !s.key.has(digestRef, "") && (k.Resend == nil || s.ts != nil) {
				properties["KeyStableAcrossRetries"] = k.KeyStableAcrossRetries
				properties["ChangedPayloadChangesFingerprint"] = k.ChangedPayloadChangesFingerprint
			}
			for _, f := range fixtures {
				t.Run(filepath.Base(f.Path), func(t *testing.T) {
					// A case keyed by a digest (Cashfree's refunds) has
					// nothing a retry may change, as above.
					for _, name := range digestKeyedSkips(t, s, f.Body) {
						delete(properties, name)
					}
					for name, run := range properties {
						t.Run(name, func(t *testing.T) { run(t, f.Body) })
					}
				})
			}
		})
	}
}

// digestKeyedSkips names the properties that do not apply to a fixture
// whose key, under one of the spec's event cases, is a digest of its body.
func digestKeyedSkips(t *testing.T, s *Spec, body []byte) []string {
	t.Helper()
	if len(s.cases) == 0 {
		return nil
	}
	p, err := newTest(s, []string{secretFor(s, "kit-secret-a")}, s.examples[0].settings, nil)
	require.NoError(t, err)
	items, err := p.Parse(providers.Delivery{Body: body})
	if err != nil || !strings.Contains(items[0].Key, rawjson.HexSum(body)) {
		return nil
	}
	return []string{"KeyStableAcrossRetries", "ChangedPayloadChangesFingerprint"}
}
