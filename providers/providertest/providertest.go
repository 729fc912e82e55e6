// Package providertest is the conformance kit every provider adapter runs
// in its own tests, in one call:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Kit{
//			New: func(secret string, now func() time.Time) (providers.Provider, error) {
//				return stripe.New([]string{secret}, 5*time.Minute, stripe.WithClock(now))
//			},
//			Secret:      "whsec_conformance_a",
//			OtherSecret: "whsec_conformance_b",
//			Fixtures:    "../../fixtures/stripe",
//			Retry:       providertest.BumpPendingWebhooks,
//			Change:      providertest.ChangeAmount("amount"),
//		})
//	}
//
// For every fixture in the folder it checks what the receiver relies on: a
// body signed by the adapter's own Sign verifies and parses into a usable
// event; a changed byte of the signature or of what it signs, a missing
// signature and a wrong secret are refused with an error wrapping
// providers.ErrUnauthorized; the provider's own retry of the event (re-signed
// later, with whatever the provider changes between attempts) has the same
// key, type and fingerprint; the same event with a changed amount has the
// same key but another fingerprint (else the receiver's 422 for a changed
// payload could never fire); a body that names a member twice, once in
// another case (as encoding/json would match it), is refused; and different
// fixtures have different keys; and changing any top-level field the
// signature does not cover, without signing again, either fails
// verification or leaves the event's key and type as they were, unless the
// kit declares the field confirmed with the provider (Kit.ConfirmedFields)
// or the provider signs no body (Kit.UnsignedKeyReason). For a providers.Batcher (Adyen), whose
// items are each signed inside the body, every item of every fixture is
// checked: each verifies and splits on its own as the core service receives
// it, one tampered item (Kit.TamperItem) fails the whole request, and a
// retry keeps every item's key, type and fingerprint.
//
// It is test support only: nothing outside _test.go files may import it.
package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// HeadersSuffix ends the name of a file that holds the headers a fixture
// was captured with (fixtures/paypal/<name>.headers.json beside
// <name>.json); such a file is not a fixture.
const HeadersSuffix = ".headers.json"

// MinFixtures is how many fixtures the kit requires per provider: enough to
// cover a provider's main events and to make "distinct events have distinct
// keys" mean something.
const MinFixtures = 4

// MaxTypeBytes is the longest event type the kit accepts.
const MaxTypeBytes = 255

// RetryDelay is how much later than the first delivery the kit signs a
// provider's retry. It is inside every adapter's replay tolerance and long
// enough to give a timestamped signature a different timestamp.
const RetryDelay = 2 * time.Minute

// Kit describes the adapter under test. New, Secret, OtherSecret, Fixtures,
// Retry and Change are required; the rest describe how the provider signs.
type Kit struct {
	// New builds the adapter under test with secret as its only secret
	// (signing secret, server key or callback token), reading the current
	// time from now; an adapter without a clock ignores now. The adapter
	// must implement providers.Signer.
	New func(secret string, now func() time.Time) (providers.Provider, error)
	// Secret and OtherSecret are two different secrets New accepts.
	Secret, OtherSecret string
	// Fixtures is the folder of raw bodies, fixtures/<provider>. Every
	// *.json file in it but *.headers.json is one event; there must be at
	// least MinFixtures.
	Fixtures string
	// Retry returns a body as the provider may send it again on its own
	// retry (or a dashboard resend) of the same event, before signing:
	// Stripe counts pending_webhooks down, a provider may serialise its
	// members in another order, add a field or update a timestamp. It must
	// change the body, and only in ways the adapter's fingerprint must
	// ignore, so that the check can fail: an unchanged body would
	// fingerprint the same under any adapter.
	Retry func(body []byte) []byte
	// Change returns the body of the same event (same key) with what it
	// says happened changed, typically its amount (see ChangeAmount), before
	// signing. The adapter must give it another fingerprint.
	Change func(body []byte) []byte
	// SignatureField names the top-level body member that carries the
	// signature, for a provider that signs inside the body (Midtrans's
	// signature_key). Empty means the signature is in the headers Sign
	// returns.
	SignatureField string
	// SignedFields lists the top-level members the signature covers, for a
	// provider whose signature covers only part of the body (Midtrans's
	// order_id, status_code and gross_amount). Nil means the signature
	// covers every byte of the body, unless BodyUnsigned is set.
	SignedFields []string
	// BodyUnsigned says the provider's signature does not cover the body at
	// all (Xendit's static callback token); only the token is tampered with.
	BodyUnsigned bool
	// Resend is for a provider whose event key is in a signed header, not
	// in the body (Standard Webhooks' webhook-id; the adapter is a
	// providers.HeaderParser): it signs body as another delivery of the
	// event first was delivered with (the same id, a new timestamp and
	// signature). The retry and changed-payload checks sign with it instead
	// of Sign. Such a provider resends the very same body on a retry, so
	// Retry may then be nil (the body is sent unchanged), and the retry
	// check requires the headers to change instead.
	Resend func(p providers.Provider, first http.Header, body []byte) ([]byte, http.Header, error)
	// Form says the provider posts an application/x-www-form-urlencoded
	// form, not JSON (Duitku): SignatureField and SignedFields then name
	// form fields, tampering changes bytes of their values, and instead of
	// a JSON member named twice the kit sends each field twice, which must
	// be refused with an error wrapping providers.ErrMalformed (400),
	// whether by verification or by parsing. Retry and Change see the form
	// body (see FormReordered, WithFormField, ChangeFormAmount).
	Form bool
	// Unreachable is for an adapter whose verification needs the network
	// (a providers.ContextVerifier, such as PayPal's, which fetches its
	// signing certificate): it builds the adapter as New does, but with
	// that network down. The kit then requires a correctly signed delivery
	// to be refused with an error wrapping providers.ErrUnavailable (503,
	// so that the provider retries), never providers.ErrUnauthorized. New
	// gives the adapter a working fake network.
	Unreachable func(secret string, now func() time.Time) (providers.Provider, error)
	// TamperItem is for a providers.Batcher whose items are each signed
	// inside the body (Adyen's notificationItems): it returns copies of a
	// signed body in which item i alone (in Split's order) has a signed
	// field changed, its signature changed, emptied or removed, none of
	// them signed again. The kit requires each copy to be refused with an
	// error wrapping providers.ErrUnauthorized (one tampered item fails
	// the whole request), and every item's forwarded body to verify and
	// split into that one item on its own; it runs instead of the
	// whole-body tamper checks, which cannot tell a signed byte of an item
	// from an unsigned one.
	TamperItem func(body []byte, i int) [][]byte
	// ConfirmedFields lists top-level fields outside SignedFields that the
	// event key or type is derived from, for an adapter whose
	// providers.Confirmer checks them with the provider's API before
	// anything is forwarded (Midtrans's transaction_status, Duitku's
	// resultCode and reference). The kit requires the adapter to be a
	// Confirmer. Without it, changing an unsigned field must fail
	// verification or leave every event's key and type as they were (see
	// Run).
	ConfirmedFields []string
	// UnsignedKeyReason, for a provider with BodyUnsigned (Xendit's static
	// callback token), says why its event key may come from the body the
	// token does not sign; the unsigned-field check is then skipped with
	// this reason. It is required with BodyUnsigned, and refused without.
	UnsignedKeyReason string
}

// Run runs the conformance checks for k, one subtest per fixture plus one
// across all of them.
func Run(t *testing.T, k Kit) {
	t.Helper()
	require.NotNil(t, k.New, "Kit.New is required")
	require.True(t, k.Retry != nil || k.Resend != nil, "Kit.Retry is required")
	require.NotNil(t, k.Change, "Kit.Change is required")
	require.NotEmpty(t, k.Secret, "Kit.Secret is required")
	require.NotEmpty(t, k.OtherSecret, "Kit.OtherSecret is required")
	require.NotEqual(t, k.Secret, k.OtherSecret, "Kit.Secret and Kit.OtherSecret must differ")
	require.False(t, k.BodyUnsigned && k.SignedFields != nil, "Kit.BodyUnsigned and Kit.SignedFields exclude each other")
	require.Equal(t, k.BodyUnsigned, k.UnsignedKeyReason != "",
		"Kit.UnsignedKeyReason is required with Kit.BodyUnsigned (why may the key come from an unsigned body?), and only with it")
	for _, f := range k.ConfirmedFields {
		require.False(t, slices.Contains(k.SignedFields, f), "Kit.ConfirmedFields: %s is signed", f)
	}

	paths, err := filepath.Glob(filepath.Join(k.Fixtures, "*.json"))
	require.NoError(t, err)
	// <name>.headers.json beside a body holds the headers it was captured
	// with (PayPal's, which only PayPal can sign): not a fixture itself.
	paths = slices.DeleteFunc(paths, func(p string) bool { return strings.HasSuffix(p, HeadersSuffix) })
	sort.Strings(paths)
	require.GreaterOrEqual(t, len(paths), MinFixtures, "fixtures in %s", k.Fixtures)

	c := &clock{t: time.Now().Truncate(time.Second)}
	keys := map[string]string{}
	for _, path := range paths {
		name := filepath.Base(path)
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		var evs []providers.Event
		t.Run(name, func(t *testing.T) {
			evs = k.check(t, c, body)
		})
		for _, ev := range evs {
			if other, dup := keys[ev.Key]; dup {
				t.Errorf("%s and %s have the same event key %q: distinct events need distinct keys", other, name, ev.Key)
			}
			keys[ev.Key] = name
		}
	}
}

// check runs every per-fixture check and returns the fixture's events (one,
// or one per item of a batch).
func (k Kit) check(t *testing.T, c *clock, fixture []byte) []providers.Event {
	c.set(c.get().Add(time.Hour)) // each fixture starts at a fresh time
	p := k.adapter(t, k.Secret, c)
	other := k.adapter(t, k.OtherSecret, c)

	// A signed fixture verifies and parses into a usable event, the same
	// event as the unsigned fixture: signing changes no part of the event.
	body, h, err := sign(p, bytes.Clone(fixture))
	require.NoError(t, err, "Sign")
	require.NoError(t, verify(p, h, body), "a body signed by Sign must verify")
	ev, err := events(p, h, body)
	require.NoError(t, err, "Parse of a signed fixture")
	for _, e := range ev {
		requireUsable(t, p.Name(), e)
	}
	if k.SignatureField == "" && k.TamperItem == nil {
		require.Equal(t, fixture, body, "Sign must not change a body whose signature is in the headers")
	}
	if unsigned, err := events(p, nil, fixture); err == nil {
		require.Equal(t, ev, unsigned, "signing must not change the event")
	}
	if p.Ack() != nil {
		require.NotNil(t, k.TamperItem, "a batch provider needs Kit.TamperItem")
		k.checkItems(t, p, h, body)
	}

	if k.Unreachable != nil {
		t.Run("network down is unavailable, never unauthorized", func(t *testing.T) {
			down, err := k.Unreachable(k.Secret, c.get)
			require.NoError(t, err, "Kit.Unreachable")
			err = verify(down, h, body)
			require.ErrorIs(t, err, providers.ErrUnavailable, "a signed delivery whose check cannot reach the network")
			require.NotErrorIs(t, err, providers.ErrUnauthorized, "a genuine delivery must not be refused as forged while the network is down")
		})
	}

	t.Run("changed signature byte is refused", func(t *testing.T) {
		if k.TamperItem != nil {
			t.Skip("each item's signature: see one tampered item fails the request")
		}
		n := 0
		for name, values := range h {
			if name == "Content-Type" {
				continue // how the body is encoded, not a signature
			}
			for i, v := range values {
				for _, at := range positions(len(v)) {
					bad := h.Clone()
					bad[name][i] = flip(v, at)
					requireRefused(t, p, bad, body, "header %s, byte %d changed", name, at)
					n++
				}
			}
		}
		if k.SignatureField != "" && k.Form {
			start, end := formValue(t, body, k.SignatureField)
			for _, at := range formPositions(body, start, end) {
				requireRefused(t, p, h, flipAt(body, at), "%s, byte %d changed", k.SignatureField, at-start)
				n++
			}
		} else if k.SignatureField != "" {
			m := member(t, body, k.SignatureField)
			for _, at := range positions(m.End - m.Start - 2) {
				requireRefused(t, p, h, flipAt(body, m.Start+1+at), "%s, byte %d changed", k.SignatureField, at)
				n++
			}
		}
		require.NotZero(t, n, "Sign produced no signature to tamper with")
	})

	t.Run("changed signed byte is refused", func(t *testing.T) {
		switch {
		case k.TamperItem != nil:
			t.Skip("each item's signed fields: see one tampered item fails the request")
		case k.BodyUnsigned:
			t.Skip("the provider's signature does not cover the body")
		case k.SignedFields != nil && k.Form:
			for _, f := range k.SignedFields {
				start, end := formValue(t, body, f)
				at := formPositions(body, start, end)
				require.NotEmpty(t, at, "signed field %s has no letter or digit to change", f)
				for _, at := range at {
					requireRefused(t, p, h, flipAt(body, at), "signed field %s, byte %d changed", f, at-start)
				}
			}
		case k.SignedFields != nil:
			for _, f := range k.SignedFields {
				m := member(t, body, f)
				require.Greater(t, m.End-m.Start, 2, "signed field %s is empty", f)
				// Inside the quotes of a string, anywhere in a number.
				lo, n := m.Start, m.End-m.Start
				if body[m.Start] == '"' {
					lo, n = m.Start+1, n-2
				}
				for _, at := range positions(n) {
					requireRefused(t, p, h, flipAt(body, lo+at), "signed field %s, byte %d changed", f, at)
				}
			}
		default:
			for _, at := range positions(len(body)) {
				requireRefused(t, p, h, flipAt(body, at), "body byte %d changed", at)
			}
		}
	})

	t.Run("unsigned field cannot change the key or type", func(t *testing.T) {
		k.checkUnsignedFields(t, p, h, body, ev)
	})

	t.Run("missing signature is refused", func(t *testing.T) {
		if k.TamperItem != nil {
			t.Skip("each item's signature removed: see one tampered item fails the request")
		}
		stripped := body
		if k.SignatureField != "" && k.Form {
			stripped = withoutFormField(t, body, k.SignatureField)
			requireRefused(t, p, h, stripped, "%s removed", k.SignatureField)
			requireRefused(t, p, h, []byte(string(stripped)+"&"+k.SignatureField+"="), "%s empty", k.SignatureField)
		} else if k.SignatureField != "" {
			for _, without := range [][]byte{
				withMember(t, body, k.SignatureField, ""),
				withMember(t, body, k.SignatureField, "null"),
				withMember(t, body, k.SignatureField, `""`),
			} {
				requireRefused(t, p, h, without, "%s removed or emptied", k.SignatureField)
			}
			stripped = withMember(t, body, k.SignatureField, "")
		}
		requireRefused(t, p, nil, stripped, "no headers")
		requireRefused(t, p, http.Header{}, stripped, "empty headers")
		empty := http.Header{}
		for name := range h {
			empty[name] = []string{""}
		}
		requireRefused(t, p, empty, stripped, "signature headers present but empty")
	})

	if k.Form {
		t.Run("form field given twice is refused", func(t *testing.T) { k.checkRepeatedFields(t, p, h, body) })
	} else {
		t.Run("member named twice, in another case, is refused", func(t *testing.T) { k.checkVariantMembers(t, p, h, body) })
	}

	t.Run("wrong secret is refused", func(t *testing.T) {
		requireRefused(t, other, h, body, "signed with Secret, verified with OtherSecret")
		otherBody, otherH, err := sign(other, bytes.Clone(fixture))
		require.NoError(t, err)
		require.NoError(t, verify(other, otherH, otherBody))
		requireRefused(t, p, otherH, otherBody, "signed with OtherSecret, verified with Secret")
	})

	t.Run("provider retry keeps key, type and fingerprint", func(t *testing.T) {
		retry := bytes.Clone(fixture)
		if k.Retry != nil {
			retry = k.Retry(retry)
		}
		if k.Resend == nil {
			require.NotEqual(t, fixture, retry, "Kit.Retry must change the body")
		}
		c.set(c.get().Add(RetryDelay))
		retryBody, retryH, err := k.sameEvent(p, h, retry)
		require.NoError(t, err)
		if k.Resend != nil {
			require.NotEqual(t, h, retryH, "a retry is signed afresh: Kit.Resend must change the headers")
		}
		require.NoError(t, verify(p, retryH, retryBody), "the retry must verify")
		got, err := events(p, retryH, retryBody)
		require.NoError(t, err)
		require.Equal(t, ev, got, "a retry of one event must have the same key, type and fingerprint (every item's)")
		// The first attempt still verifies: signatures do not depend on
		// anything that changed since.
		require.NoError(t, verify(p, h, body))
	})

	t.Run("changed payload changes the fingerprint", func(t *testing.T) {
		changed := k.Change(bytes.Clone(fixture))
		require.NotEqual(t, fixture, changed, "Kit.Change must change the body")
		changedBody, changedH, err := k.sameEvent(p, h, changed)
		require.NoError(t, err)
		require.NoError(t, verify(p, changedH, changedBody), "the changed body must verify")
		got, err := events(p, changedH, changedBody)
		require.NoError(t, err)
		require.Equal(t, keysOf(ev), keysOf(got), "Kit.Change must keep the event keys")
		require.NotEqual(t, fingerprintsOf(ev), fingerprintsOf(got),
			"a changed payload under the same key must change the fingerprint: else it is answered as a replay of the first instead of 422")
	})
	return ev
}

// events derives a verified delivery's events as the receiver does
// (Provider.Parse): one, or one per item of a batch.
func events(p providers.Provider, h http.Header, body []byte) ([]providers.Event, error) {
	items, err := p.Parse(providers.Delivery{Header: h, Body: body})
	if err != nil {
		return nil, err
	}
	out := make([]providers.Event, len(items))
	for i, it := range items {
		out[i] = it.Event
	}
	return out, nil
}

func keysOf(evs []providers.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Key
	}
	return out
}

func fingerprintsOf(evs []providers.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Fingerprint
	}
	return out
}

// checkItems runs a Batcher's own checks on a signed body: every item's
// forwarded body verifies and splits into that one item, and one tampered
// item, whichever it is, fails the whole request.
func (k Kit) checkItems(t *testing.T, p providers.Provider, h http.Header, body []byte) {
	items, err := p.Parse(providers.Delivery{Header: h, Body: body})
	require.NoError(t, err)
	require.NotEmpty(t, items)
	t.Run("every item verifies on its own", func(t *testing.T) {
		for i, it := range items {
			require.NoError(t, verify(p, h, it.Body), "item %d's forwarded body", i)
			one, err := p.Parse(providers.Delivery{Header: h, Body: it.Body})
			require.NoError(t, err, "item %d's forwarded body", i)
			require.Equal(t, []providers.Item{it}, one, "item %d's forwarded body is that item alone", i)
		}
	})
	t.Run("one tampered item fails the request", func(t *testing.T) {
		for i := range items {
			bad := k.TamperItem(bytes.Clone(body), i)
			require.NotEmpty(t, bad, "Kit.TamperItem gave no tampered copy of item %d", i)
			for j, b := range bad {
				require.NotEqual(t, body, b, "Kit.TamperItem copy %d of item %d is unchanged", j, i)
				requireRefused(t, p, h, b, "item %d of %d, tampered copy %d", i, len(items), j)
			}
		}
	})
}

// checkRepeatedFields sends each field of a form twice, with its own value
// and another: verification or parsing must refuse it with 400, since the
// core service may read another of the two values than webhookd did.
func (k Kit) checkRepeatedFields(t *testing.T, p providers.Provider, h http.Header, body []byte) {
	fields := formFields(t, body)
	require.NotEmpty(t, fields)
	for _, f := range fields {
		for _, value := range []string{string(body[f.start:f.end]), "webhookd-conformance-variant"} {
			dup := []byte(string(body) + "&" + f.rawName + "=" + value)
			err := verify(p, h, dup)
			if err == nil {
				_, err = p.Parse(providers.Delivery{Header: h, Body: dup})
			}
			require.ErrorIs(t, err, providers.ErrMalformed, "%s given twice must be refused with 400", f.rawName)
		}
	}
}

// checkVariantMembers inserts, for each top-level member of a JSON body,
// the same name in another case: a Go core service decodes struct fields
// case-insensitively, last one wins, so webhookd must not key an event by
// one spelling while the core reads another.
func (k Kit) checkVariantMembers(t *testing.T, p providers.Provider, h http.Header, body []byte) {
	n := 0
	for _, name := range topNames(t, body) {
		for _, variant := range caseVariants(name) {
			dup := insertFirst(body, variant, `"webhookd-conformance-variant"`)
			dupBody, dupH, err := sign(p, bytes.Clone(dup))
			if err != nil {
				// Refusing to sign it is a refusal too; the signature
				// of the original still covers a body-signed provider's
				// fields.
				dupBody, dupH = dup, h
			}
			if verify(p, dupH, dupBody) == nil {
				_, err := p.Parse(providers.Delivery{Header: dupH, Body: dupBody})
				require.ErrorIs(t, err, providers.ErrMalformed, "%q after %q must be refused", variant, name)
			}
			n++
		}
	}
	require.NotZero(t, n, "the fixture has no member name with a letter")
}

// sameEvent signs body as another delivery of the event first was sent as:
// with Resend for a provider keyed by a header, else with Sign (the key is
// in the body).
func (k Kit) sameEvent(p providers.Provider, first http.Header, body []byte) ([]byte, http.Header, error) {
	if k.Resend != nil {
		return k.Resend(p, first, body)
	}
	return sign(p, body)
}

// sign signs body with p's Sign.
func sign(p providers.Provider, body []byte) ([]byte, http.Header, error) {
	d, err := p.Sign(body)
	return d.Body, d.Header, err
}

func (k Kit) adapter(t *testing.T, secret string, c *clock) providers.Provider {
	t.Helper()
	p, err := k.New(secret, c.get)
	require.NoError(t, err, "Kit.New")
	require.NotNil(t, p)
	return p
}

// requireUsable checks that an event can be stored and sent on: the receiver
// refuses anything else with 400.
func requireUsable(t *testing.T, provider string, ev providers.Event) {
	t.Helper()
	require.True(t, providers.IsToken(ev.Key, dedupe.MaxKeyLen-len(provider)-1),
		"key %q must be printable ASCII without spaces, short enough for the store", ev.Key)
	if ev.Type != "" {
		require.True(t, providers.IsToken(ev.Type, MaxTypeBytes), "type %q must be a header-safe token", ev.Type)
	}
	require.NotEmpty(t, ev.Fingerprint, "fingerprint")
}

// verify authenticates a delivery as the receiver does, with a context, so
// that an adapter that needs the network uses the one its Kit.New gave it.
func verify(p providers.Provider, h http.Header, body []byte) error {
	return p.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
}

func requireRefused(t *testing.T, p providers.Provider, h http.Header, body []byte, msg string, args ...any) {
	t.Helper()
	err := verify(p, h, body)
	what := fmt.Sprintf(msg, args...)
	require.Error(t, err, what)
	require.ErrorIs(t, err, providers.ErrUnauthorized, what)
}

// positions picks up to five byte offsets spread over n bytes.
func positions(n int) []int {
	if n <= 0 {
		return nil
	}
	seen := map[int]bool{}
	var out []int
	for _, at := range []int{0, n / 4, n / 2, 3 * n / 4, n - 1} {
		if !seen[at] {
			seen[at] = true
			out = append(out, at)
		}
	}
	return out
}

// flip changes one bit of s[at]. XOR 1 never turns a letter into its other
// case, so a hex digit cannot change into an equivalent one.
func flip(s string, at int) string {
	b := []byte(s)
	b[at] ^= 0x01
	return string(b)
}

func flipAt(body []byte, at int) []byte {
	b := bytes.Clone(body)
	b[at] ^= 0x01
	return b
}

func member(t *testing.T, body []byte, name string) rawjson.Member {
	t.Helper()
	o, err := rawjson.Parse(body)
	require.NoError(t, err)
	m, ok, err := o.Get(name)
	require.NoError(t, err)
	require.True(t, ok, "member %s missing from the signed body", name)
	return m
}

// topNames returns the names of body's top-level members.
func topNames(t *testing.T, body []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// caseVariants returns other spellings of name that encoding/json matches
// to the same struct field, JSON-quoted: upper case, and "s" as the long s
// U+017F, once as UTF-8 and once escaped.
func caseVariants(name string) []string {
	quote := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var out []string
	if up := strings.ToUpper(name); up != name {
		out = append(out, quote(up))
	}
	if strings.Contains(name, "s") {
		long := quote(strings.ReplaceAll(name, "s", "\u017f"))
		out = append(out, long, strings.ReplaceAll(long, "\u017f", `\u017f`))
	}
	return out
}

// insertFirst returns body, a JSON object, with the member quotedName:value
// inserted as its first member and every other byte kept.
func insertFirst(body []byte, quotedName, value string) []byte {
	at := bytes.IndexByte(body, '{') + 1
	out := make([]byte, 0, len(body)+len(quotedName)+len(value)+2)
	out = append(out, body[:at]...)
	out = append(out, quotedName+":"+value+","...)
	return append(out, body[at:]...)
}

// withMember returns body re-encoded with the top-level member name set to
// the raw JSON value, or removed when value is "".
func withMember(t *testing.T, body []byte, name, value string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	if value == "" {
		delete(m, name)
	} else {
		m[name] = json.RawMessage(value)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

type clock struct{ t time.Time }

func (c *clock) get() time.Time  { return c.t }
func (c *clock) set(t time.Time) { c.t = t }

var pendingWebhooks = regexp.MustCompile(`"pending_webhooks"(\s*):(\s*)([0-9]+)`)

// BumpPendingWebhooks is Stripe's Kit.Retry: it adds one to the event's
// pending_webhooks, which Stripe changes between attempts of one event, and
// leaves every other byte alone. A body without pending_webhooks is returned
// unchanged (and then fails the kit's "Retry must change the body" check).
func BumpPendingWebhooks(body []byte) []byte {
	return pendingWebhooks.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := pendingWebhooks.FindSubmatch(m)
		n, err := strconv.Atoi(string(sub[3]))
		if err != nil {
			return m
		}
		return fmt.Appendf(nil, `"pending_webhooks"%s:%s%d`, sub[1], sub[2], n+1)
	})
}

// ChangeAmount returns a Kit.Change that alters the first of names that
// occurs in the body as a member (at any depth) whose value is a number or a
// string starting with a digit: a "1" is put before its first digit, which
// keeps it a well-formed amount ("60000.00" becomes "160000.00") and leaves
// every other byte alone. A body with none of names is returned unchanged
// (and then fails the kit's "Change must change the body" check).
func ChangeAmount(names ...string) func(body []byte) []byte {
	res := make([]*regexp.Regexp, len(names))
	for i, n := range names {
		res[i] = regexp.MustCompile(`("` + regexp.QuoteMeta(n) + `"\s*:\s*"?)([0-9])`)
	}
	return func(body []byte) []byte {
		for _, re := range res {
			if loc := re.FindSubmatchIndex(body); loc != nil {
				at := loc[4] // the first digit
				out := make([]byte, 0, len(body)+1)
				out = append(out, body[:at]...)
				out = append(out, '1')
				return append(out, body[at:]...)
			}
		}
		return body
	}
}

// Reordered returns body with its top-level members in reverse order,
// compact, each value's bytes kept as they are: the same event as a provider
// that serialises its members differently would send it. A body that is not
// a JSON object is returned unchanged.
func Reordered(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return body
	}
	type member struct {
		name  string
		value json.RawMessage
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return body
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return body
		}
		members = append(members, member{name, v})
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i := len(members) - 1; i >= 0; i-- {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		quoted, _ := json.Marshal(members[i].name)
		out.Write(quoted)
		out.WriteByte(':')
		out.Write(members[i].value)
	}
	out.WriteByte('}')
	return out.Bytes()
}

// WithMember returns a function that inserts the top-level member name with
// the raw JSON value as the body's first member, leaving every other byte
// alone: a field the provider added since the first attempt. The body must
// be a JSON object that does not have name yet; any other body is returned
// unchanged.
func WithMember(name, value string) func(body []byte) []byte {
	return func(body []byte) []byte {
		o, err := rawjson.Parse(body)
		if err != nil {
			return body
		}
		if _, ok, err := o.Get(name); ok || err != nil {
			return body
		}
		quoted, _ := json.Marshal(name)
		insert := string(quoted) + ":" + value
		if o.Len() > 0 {
			insert += ","
		}
		out := make([]byte, 0, len(body)+len(insert))
		out = append(out, body[:o.Open()]...)
		out = append(out, insert...)
		return append(out, body[o.Open():]...)
	}
}

// Chain returns a function that applies fs in order.
func Chain(fs ...func(body []byte) []byte) func(body []byte) []byte {
	return func(body []byte) []byte {
		for _, f := range fs {
			body = f(body)
		}
		return body
	}
}

// OneEvent returns the event of a delivery that carries exactly one, for
// tests of single-event adapters: OneEvent(a.Parse(d)).
func OneEvent(items []providers.Item, err error) (providers.Event, error) {
	if err != nil {
		return providers.Event{}, err
	}
	if len(items) != 1 {
		return providers.Event{}, fmt.Errorf("%w: %d events, want 1", providers.ErrMalformed, len(items))
	}
	return items[0].Event, nil
}
