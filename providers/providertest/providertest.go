// Package providertest is the conformance kit every provider adapter runs
// in its own tests, in one call:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Kit{
//			New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
//				return acme.New(secrets, 5*time.Minute, acme.WithClock(now))
//			},
//			Secrets:  [2]string{"acme_conformance_a", "acme_conformance_b"},
//			Fixtures: "../../fixtures/acme",
//			Change:   providertest.ChangeAmount("amount"),
//			Examples: []providertest.Example{{Source: "https://...", ...}},
//		})
//	}
//
// Run checks each property the receiver relies on with one method of Kit,
// which an adapter's test may also call on its own:
//
//   - PublishedExample: a delivery the provider itself published (its
//     documentation or an official SDK's tests: headers, body, secret,
//     settings and clock) verifies and parses, and a changed byte of it does
//     not. An adapter checked only against its own Sign could leave a signed
//     part (a notification URL) out of both Sign and Verify and still pass
//     every other property; an adapter without a published example must say
//     why (Kit.SelfDerived).
//
//   - SignedVerifies: a fixture signed by the adapter's Sign verifies and
//     parses into usable events, the same events as the unsigned fixture.
//
//   - TamperedRefused: a changed byte of the signature or of what it signs,
//     and a missing signature, are refused with an error wrapping
//     providers.ErrUnauthorized (for a batch, one tampered item refuses the
//     request).
//
//   - Rotation: with two secrets configured, a delivery signed with either
//     verifies, Sign uses the first, and one signed with a secret not
//     configured is refused.
//
//   - UnsignedFieldsInert: changing a field the signature does not cover,
//     without signing again, fails verification or leaves every event's key
//     and type as they were, unless the field is confirmed with the provider
//     (Kit.ConfirmedFields) or the provider signs no body
//     (Kit.UnsignedKeyReason).
//
//   - DuplicateFieldsRefused: a body that names a field twice (a JSON member
//     in another case, as encoding/json would match it; a form field
//     repeated) is refused.
//
//   - KeyStableAcrossRetries: the provider's own retry of an event has the
//     same key, type and fingerprint.
//
//   - ChangedPayloadChangesFingerprint: the same event with a changed amount
//     keeps its key but changes its fingerprint (else the receiver's 422 for
//     a changed payload could never fire).
//
//   - NetworkDownUnavailable: an adapter whose verification needs the
//     network answers ErrUnavailable, never ErrUnauthorized, while it is down.
//
//   - BatchItemsStandAlone: each item of a batch verifies and parses on its
//     own, as the core service receives it.
//
//   - StaleRefused: with Kit.Tolerance, a delivery verified after the
//     tolerance has passed is refused as timestamp_outside_tolerance.
//
//   - DistinctEventsDistinct: different fixtures have different keys.
//
// Run runs only the properties that apply to the provider (see Run); the
// methods called on their own log, rather than skip, when one does not.
// Every per-fixture property signs the fixture, with the adapter's
// providers.Signer: an adapter that is none, or whose Sign refuses with
// providers.ErrCannotSign, is checked against its published examples only
// (which it must have) and its fixtures' keys, and the log says so.
//
// The body's encoding (JSON or a form) is Kit.Format: the properties ask it
// where a field's value lies, how to remove, repeat or change it.
//
// It is test support only: nothing outside _test.go files may import it.
package providertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	fixturefile "github.com/webhookd/webhookd/providers/fixture"
)

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

// Kit describes the adapter under test. New, Secrets, Fixtures, Retry (or
// Resend) and Change are required, and Examples or SelfDerived; the rest
// describe how the provider signs. An adapter that cannot sign needs
// Examples, and neither Retry nor Change.
type Kit struct {
	// New builds the adapter under test accepting secrets (signing
	// secrets, keys, tokens or webhook ids), in order: Sign uses the first.
	// It reads the current time from now; an adapter without a clock
	// ignores now.
	New func(secrets []string, now func() time.Time) (providers.Provider, error)
	// Secrets are two different secrets New accepts.
	Secrets [2]string
	// SingleSecret, for a provider configured with one secret only
	// (Midtrans's server key), says why: New is then given one secret at
	// a time, and Rotation checks only that the other is refused.
	SingleSecret string
	// Fixtures is the folder of raw bodies, fixtures/<provider>, read as
	// `webhookd replay` reads it (fixturefile.Load); there must be at least
	// MinFixtures.
	Fixtures string
	// Format is how the provider encodes its body: JSON (the default) or
	// Form.
	Format Format
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
	// Resend is for a provider whose event key is in a signed header, not
	// in the body (Standard Webhooks' webhook-id): it signs body as another
	// delivery of the event first was (the same id, a new timestamp and
	// signature). The retry and changed-payload checks sign with it instead
	// of Sign. Such a provider resends the very same body on a retry, so
	// Retry may then be nil, and the retry check requires the headers to
	// change instead.
	Resend func(p providers.Provider, first providers.Delivery, body []byte) (providers.Delivery, error)
	// SignatureField names the body field that carries the signature, for
	// a provider that signs inside the body (Midtrans's signature_key).
	// Empty means the signature is in the headers Sign returns.
	SignatureField string
	// SignedFields lists the body fields the signature covers, for a
	// provider whose signature covers only part of the body (Midtrans's
	// order_id, status_code and gross_amount). Nil means the signature
	// covers every byte of the body, unless BodyUnsigned is set.
	SignedFields []string
	// BodyUnsigned says the provider's signature does not cover the body at
	// all (Xendit's static callback token); only the token is tampered with.
	BodyUnsigned bool
	// UnsignedKeyReason, required with BodyUnsigned and refused without,
	// says why the event key may come from a body the provider does not
	// sign; UnsignedFieldsInert is then skipped with this reason.
	UnsignedKeyReason string
	// ConfirmedFields lists body fields outside SignedFields that the event
	// key or type is derived from, for an adapter whose providers.Confirmer
	// checks them with the provider's API before anything is forwarded
	// (Midtrans's transaction_status, Duitku's resultCode). The adapter must
	// be a Confirmer.
	ConfirmedFields []string
	// Unreachable is for an adapter whose verification needs the network
	// (PayPal's fetches its signing certificate): it builds the adapter as
	// New does, but with that network down. New gives the adapter a
	// working fake network.
	Unreachable func(secrets []string, now func() time.Time) (providers.Provider, error)
	// TamperItem is for a batch provider whose items are each signed inside
	// the body (Adyen's notificationItems): it returns copies of a signed
	// body in which item i alone (in Parse's order) has a signed field
	// changed, its signature changed, emptied or removed, none of them
	// signed again. It replaces the whole-body tamper checks, which cannot
	// tell a signed byte of an item from an unsigned one.
	TamperItem func(body []byte, i int) [][]byte
	// Examples are deliveries the provider published (see Example); at
	// least one is required unless SelfDerived says why there is none.
	Examples []Example
	// SelfDerived says why the provider publishes no example that pairs a
	// secret with a signature, for an adapter whose Examples are then
	// derived by hand from the provider's algorithm (DOKU's).
	SelfDerived string
	// Tolerance is how old a signed timestamp the adapter under test
	// accepts, for a provider that signs one; StaleRefused applies only
	// when it is set.
	Tolerance time.Duration
}

// Run checks every property of k that applies to it: PublishedExample,
// then each fixture's (one subtest per fixture, one per property), then
// DistinctEventsDistinct. A property that does not apply to the provider
// (the network check of one that needs none, the batch check of one whose
// request carries one event) is not run, and said once in the test's log:
// a skip is kept for a test that could not run here.
func Run(t *testing.T, k Kit) {
	t.Helper()
	require.NotNil(t, k.New, "Kit.New is required")
	fixtures := k.fixtures(t)
	unsigned := k.cannotSign(t, fixtures[0].body)
	k.check(t, unsigned)
	t.Run("PublishedExample", k.PublishedExample)
	props := k.properties(t, unsigned)
	for _, f := range fixtures {
		if len(props) == 0 {
			break
		}
		t.Run(f.name, func(t *testing.T) {
			for _, p := range props {
				t.Run(p.name, func(t *testing.T) { p.run(t, f.body) })
			}
		})
	}
	t.Run("DistinctEventsDistinct", func(t *testing.T) { k.DistinctEventsDistinct(t, fixtures) })
}

// property is one per-fixture property of the kit.
type property struct {
	name string
	run  func(*testing.T, []byte)
}

// properties lists the per-fixture properties that apply to k, logging
// the others with why. Each of them signs a fixture: none applies to an
// adapter that cannot sign (unsigned says why).
func (k Kit) properties(t *testing.T, unsigned string) []property {
	batch := providers.AckOf(k.adapter(t, newClock(), k.Secrets[0])) != nil
	var out []property
	var names []string
	for _, p := range []struct {
		property
		notApplicable string // why it does not apply; "" when it does
	}{
		{property{"SignedVerifies", k.SignedVerifies}, ""},
		{property{"TamperedRefused", k.TamperedRefused}, ""},
		{property{"Rotation", k.Rotation}, ""},
		{property{"UnsignedFieldsInert", k.UnsignedFieldsInert}, when(k.BodyUnsigned, k.UnsignedKeyReason)},
		{property{"DuplicateFieldsRefused", k.DuplicateFieldsRefused}, ""},
		{property{"KeyStableAcrossRetries", k.KeyStableAcrossRetries}, ""},
		{property{"ChangedPayloadChangesFingerprint", k.ChangedPayloadChangesFingerprint}, ""},
		{property{"NetworkDownUnavailable", k.NetworkDownUnavailable}, when(k.Unreachable == nil, "verification needs no network")},
		{property{"BatchItemsStandAlone", k.BatchItemsStandAlone}, when(!batch, "a request carries one event")},
		{property{"StaleRefused", k.StaleRefused}, when(k.Tolerance <= 0, "no signed timestamp (Kit.Tolerance)")},
	} {
		if unsigned != "" {
			names = append(names, p.name)
			continue
		}
		if p.notApplicable != "" {
			t.Logf("%s does not apply: %s", p.name, p.notApplicable)
			continue
		}
		out = append(out, p.property)
	}
	if unsigned != "" {
		t.Logf("%s do not apply: %s", strings.Join(names, ", "), unsigned)
	}
	return out
}

// when returns why if cond holds, else "".
func when(cond bool, why string) string {
	if cond {
		return why
	}
	return ""
}

// check refuses a Kit that is incomplete or contradicts itself. An adapter
// that cannot sign (unsigned says why) needs published examples, and no
// Retry or Change, which only signing properties use.
func (k Kit) check(t *testing.T, unsigned string) {
	t.Helper()
	if unsigned != "" {
		require.NotEmpty(t, k.Examples, "%s: Kit.Examples are required, since they are all it is checked against", unsigned)
	} else {
		require.True(t, k.Retry != nil || k.Resend != nil, "Kit.Retry is required")
		require.NotNil(t, k.Change, "Kit.Change is required")
	}
	require.NotEmpty(t, k.Secrets[0], "Kit.Secrets is required")
	require.NotEmpty(t, k.Secrets[1], "Kit.Secrets is required")
	require.NotEqual(t, k.Secrets[0], k.Secrets[1], "Kit.Secrets must differ")
	require.False(t, k.BodyUnsigned && k.SignedFields != nil, "Kit.BodyUnsigned and Kit.SignedFields exclude each other")
	require.Equal(t, k.BodyUnsigned, k.UnsignedKeyReason != "",
		"Kit.UnsignedKeyReason is required with Kit.BodyUnsigned (why may the key come from an unsigned body?), and only with it")
	for _, f := range k.ConfirmedFields {
		require.False(t, slices.Contains(k.SignedFields, f), "Kit.ConfirmedFields: %s is signed", f)
	}
}

// fixture is one body of Kit.Fixtures.
type fixture struct {
	name string
	body []byte
}

// fixtures reads Kit.Fixtures as `webhookd replay` does.
func (k Kit) fixtures(t *testing.T) []fixture {
	t.Helper()
	loaded, err := fixturefile.Load([]string{k.Fixtures}, "")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(loaded), MinFixtures, "fixtures in %s", k.Fixtures)
	out := make([]fixture, len(loaded))
	for i, f := range loaded {
		out[i] = fixture{name: baseName(f.Path), body: f.Body}
	}
	return out
}

// format returns Kit.Format, JSON by default.
func (k Kit) format() Format {
	if k.Format == nil {
		return JSON
	}
	return k.Format
}

// secrets returns what New is given for an adapter that signs with
// Secrets[i] first.
func (k Kit) secrets(i int) []string {
	if k.SingleSecret != "" {
		return []string{k.Secrets[i]}
	}
	return []string{k.Secrets[i], k.Secrets[1-i]}
}

// cannotSign says why the adapter under test cannot sign fixture, "" when
// it can: it is no providers.Signer (PayPal's, whose provider signs with its
// certificate's private key), or its Sign refuses with
// providers.ErrCannotSign (a spec whose sender signs with a private key).
// Such an adapter is checked against its published examples only.
func (k Kit) cannotSign(t *testing.T, fixture []byte) string {
	t.Helper()
	_, err := providers.Sign(k.adapter(t, newClock(), k.Secrets[0]), bytes.Clone(fixture))
	if errors.Is(err, providers.ErrCannotSign) {
		return err.Error() + ": checked against its published examples only (Kit.Examples)"
	}
	return ""
}

// signless reports, and logs, that the adapter under test cannot sign
// fixture: a property that signs it does not apply.
func (k Kit) signless(t *testing.T, fixture []byte) bool {
	t.Helper()
	why := k.cannotSign(t, fixture)
	if why != "" {
		t.Log("does not apply:", why)
	}
	return why != ""
}

// adapter builds the adapter under test accepting secrets, on c's clock.
func (k Kit) adapter(t *testing.T, c *clock, secrets ...string) providers.Provider {
	t.Helper()
	p, err := k.New(secrets, c.get)
	require.NoError(t, err, "Kit.New")
	require.NotNil(t, p)
	return p
}

// subject is a fixture signed by the adapter under test, and its events.
type subject struct {
	p      providers.Provider
	clock  *clock
	signed providers.Delivery
	events []providers.Event
}

// sign builds the adapter with the first of Secrets (and no other, so that
// a check that one secret is refused is not passed by the other) and signs
// fixture with it.
func (k Kit) sign(t *testing.T, fixture []byte) subject {
	t.Helper()
	c := newClock()
	p := k.adapter(t, c, k.Secrets[0])
	d, err := providers.Sign(p, fixture)
	require.NoError(t, err, "Sign")
	require.NoError(t, verify(p, d), "a body signed by Sign must verify")
	ev, err := events(p, d)
	require.NoError(t, err, "Parse of a signed fixture")
	return subject{p: p, clock: c, signed: d, events: ev}
}

// events derives a verified delivery's events as the receiver does: one,
// or one per item of a batch.
func events(p providers.Provider, d providers.Delivery) ([]providers.Event, error) {
	items, err := p.Parse(d)
	if err != nil {
		return nil, err
	}
	out := make([]providers.Event, len(items))
	for i, it := range items {
		out[i] = it.Event
	}
	return out, nil
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
func verify(p providers.Provider, d providers.Delivery) error {
	return p.Verify(context.Background(), d)
}

func requireRefused(t *testing.T, p providers.Provider, d providers.Delivery, msg string, args ...any) {
	t.Helper()
	err := verify(p, d)
	what := fmt.Sprintf(msg, args...)
	require.Error(t, err, what)
	require.ErrorIs(t, err, providers.ErrUnauthorized, what)
}

// requireReason checks that d is refused for reason (providers.Reason).
func requireReason(t *testing.T, p providers.Provider, d providers.Delivery, reason string, msg string, args ...any) {
	t.Helper()
	require.Equal(t, reason, providers.Reason(verify(p, d)), "%s: the error must wrap the class of reason %s "+
		"(providers.ErrSignatureMissing, ErrSignatureInvalid, ErrTimestamp; docs/adding-a-provider.md)", fmt.Sprintf(msg, args...), reason)
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

// ShiftedApart checks that bodies a and b, whose key parts differ only by
// where a separator falls ("X:1"+"2" and "X"+"1:2"), never share an event
// key: Parse refuses one of them (providers.ErrMalformed) or keys them
// apart. Either shares a key with the other when a key does not split back
// one way, and the second event would be answered as a replay of the first
// (docs/contract.md, "Event keys").
func ShiftedApart(t testing.TB, p providers.Provider, a, b []byte) {
	t.Helper()
	ea, errA := OneEvent(p.Parse(providers.Delivery{Body: a}))
	eb, errB := OneEvent(p.Parse(providers.Delivery{Body: b}))
	for _, err := range []error{errA, errB} {
		if err != nil {
			require.ErrorIs(t, err, providers.ErrMalformed)
		}
	}
	if errA == nil && errB == nil {
		require.NotEqual(t, ea.Key, eb.Key, "%s and %s share a key", a, b)
	}
}
