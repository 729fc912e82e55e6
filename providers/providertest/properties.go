package providertest

import (
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// SignedVerifies checks that fixture, signed by the adapter's Sign,
// verifies and parses into usable events, the same as the unsigned
// fixture's: signing changes no part of an event. A provider that signs in
// the headers must not change the body.
func (k Kit) SignedVerifies(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	require.NotEmpty(t, s.events)
	for _, ev := range s.events {
		requireUsable(t, s.p.Name(), ev)
	}
	if k.SignatureField == "" && k.TamperItem == nil {
		require.Equal(t, fixture, s.signed.Body, "Sign must not change a body whose signature is in the headers")
	}
	if unsigned, err := events(s.p, providers.Delivery{Body: fixture}); err == nil {
		require.Equal(t, s.events, unsigned, "signing must not change the event")
	}
}

// TamperedRefused checks that a changed byte of the signature, a changed
// byte of what it signs and a missing signature are each refused with an
// error wrapping providers.ErrUnauthorized (a delivery without any header
// or signature field with reason signature_missing); for a batch (Kit.TamperItem),
// that one tampered item refuses the whole request.
func (k Kit) TamperedRefused(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	if k.TamperItem != nil {
		k.tamperItems(t, s)
		return
	}
	t.Run("signature byte", func(t *testing.T) { k.tamperSignature(t, s) })
	if !k.BodyUnsigned {
		t.Run("signed byte", func(t *testing.T) { k.tamperSigned(t, s) })
	}
	t.Run("missing signature", func(t *testing.T) { k.stripSignature(t, s) })
}

func (k Kit) tamperSignature(t *testing.T, s subject) {
	d, n := s.signed, 0
	for name, values := range d.Header {
		if name == "Content-Type" {
			continue // how the body is encoded, not a signature
		}
		for i, v := range values {
			for _, at := range positions(len(v)) {
				bad := d.Header.Clone()
				bad[name][i] = flip(v, at)
				requireRefused(t, s.p, providers.Delivery{Header: bad, Query: d.Query, Body: d.Body}, "header %s, byte %d changed", name, at)
				n++
			}
		}
	}
	if k.SignatureField != "" {
		for i, body := range k.format().Tamper(t, d.Body, k.SignatureField) {
			requireRefused(t, s.p, with(d, body), "%s, change %d", k.SignatureField, i)
			n++
		}
	}
	require.NotZero(t, n, "Sign produced no signature to tamper with")
}

func (k Kit) tamperSigned(t *testing.T, s subject) {
	d := s.signed
	switch {
	case k.BodyUnsigned:
		t.Log("does not apply: the provider's signature does not cover the body")
	case k.SignedFields != nil:
		for _, f := range k.SignedFields {
			bad := k.format().Tamper(t, d.Body, f)
			require.NotEmpty(t, bad, "signed field %s has no byte to change", f)
			for i, body := range bad {
				requireRefused(t, s.p, with(d, body), "signed field %s, change %d", f, i)
			}
		}
	default:
		for _, at := range positions(len(d.Body)) {
			requireRefused(t, s.p, with(d, flipAt(d.Body, at)), "body byte %d changed", at)
		}
	}
}

func (k Kit) stripSignature(t *testing.T, s subject) {
	d := s.signed
	stripped := d.Body
	if k.SignatureField != "" {
		without := k.format().Without(t, d.Body, k.SignatureField)
		for i, body := range without {
			requireRefused(t, s.p, with(d, body), "%s removed or emptied (%d)", k.SignatureField, i)
		}
		stripped = without[0]
	}
	requireRefused(t, s.p, providers.Delivery{Body: stripped}, "no headers")
	requireReason(t, s.p, providers.Delivery{Body: stripped}, providers.ReasonSignatureMissing, "no headers")
	requireRefused(t, s.p, providers.Delivery{Header: http.Header{}, Body: stripped}, "empty headers")
	empty := http.Header{}
	for name := range d.Header {
		empty[name] = []string{""}
	}
	requireRefused(t, s.p, providers.Delivery{Header: empty, Body: stripped}, "signature headers present but empty")
}

// tamperItems checks that one tampered item, whichever it is, refuses the
// whole request.
func (k Kit) tamperItems(t *testing.T, s subject) {
	for i := range s.events {
		bad := k.TamperItem(bytes.Clone(s.signed.Body), i)
		require.NotEmpty(t, bad, "Kit.TamperItem gave no tampered copy of item %d", i)
		for j, b := range bad {
			require.NotEqual(t, s.signed.Body, b, "Kit.TamperItem copy %d of item %d is unchanged", j, i)
			requireRefused(t, s.p, with(s.signed, b), "item %d of %d, tampered copy %d", i, len(s.events), j)
		}
	}
}

// Rotation checks the adapter with both Secrets configured: a delivery
// signed with either verifies, the adapter's own Sign uses the first, and
// a delivery signed with a secret that is not configured is refused with
// reason signature_invalid.
func (k Kit) Rotation(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	c := newClock()
	only := [2]providers.Provider{k.adapter(t, c, k.Secrets[0]), k.adapter(t, c, k.Secrets[1])}
	for i, p := range only {
		d, err := providers.Sign(p, bytes.Clone(fixture))
		require.NoError(t, err, "Sign with secret %d", i)
		require.NoError(t, verify(p, d))
		requireRefused(t, only[1-i], d, "signed with secret %d alone, verified with the other alone", i)
		requireReason(t, only[1-i], d, providers.ReasonSignatureInvalid, "signed with secret %d alone, verified with the other alone", i)
		if k.SingleSecret != "" {
			continue
		}
		both := k.adapter(t, c, k.secrets(1-i)...)
		require.NoError(t, verify(both, d), "signed with secret %d, which is configured second", i)
	}
	if k.SingleSecret != "" {
		t.Log("Sign's choice of the first secret does not apply:", k.SingleSecret)
		return
	}
	d, err := providers.Sign(k.adapter(t, c, k.secrets(0)...), bytes.Clone(fixture))
	require.NoError(t, err)
	require.NoError(t, verify(only[0], d), "Sign must use the first secret")
	requireRefused(t, only[1], d, "Sign must use the first secret only")
}

// UnsignedFieldsInert changes each field of the signed fixture that the
// signature does not cover, without signing again: the delivery must fail
// verification or keep every event's key and type, or a captured delivery
// could be sent again as new events.
func (k Kit) UnsignedFieldsInert(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	if k.BodyUnsigned {
		t.Log("does not apply:", k.UnsignedKeyReason)
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	if len(k.ConfirmedFields) > 0 {
		_, ok := s.p.(providers.Confirmer)
		require.True(t, ok, "Kit.ConfirmedFields: %T must be a providers.Confirmer that checks them", s.p)
	}
	exempt := append(append([]string{k.SignatureField}, k.SignedFields...), k.ConfirmedFields...)
	n := 0
	want := keysAndTypes(s.events)
	for _, name := range k.format().Names(t, s.signed.Body) {
		if contains(exempt, name) {
			continue
		}
		for _, body := range k.format().Variants(t, s.signed.Body, name) {
			n++
			require.NotEqual(t, s.signed.Body, body, "variant of %s", name)
			d := with(s.signed, body)
			if verify(s.p, d) != nil {
				continue
			}
			got, err := events(s.p, d)
			if err != nil {
				continue // no event: answered 400, nothing forwarded
			}
			require.Equal(t, want, keysAndTypes(got),
				"%s is not signed, yet changing it (body %q) changes the event key or type: a captured delivery could be re-sent as new events. "+
					"Derive them from signed data, or confirm the field with the provider (Kit.ConfirmedFields)", name, body)
		}
	}
	require.NotZero(t, n, "the fixture has no field to change")
}

// DuplicateFieldsRefused names each field of the fixture twice (see
// Format.Twice), signed again where Sign accepts it: the delivery must be
// refused, by verification or parsing, since the core service may read the
// other of the two values than webhookd did.
func (k Kit) DuplicateFieldsRefused(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	n := 0
	for _, name := range k.format().Names(t, s.signed.Body) {
		for _, dup := range k.format().Twice(s.signed.Body, name) {
			n++
			d, err := providers.Sign(s.p, bytes.Clone(dup))
			if err != nil {
				// Refusing to sign it is a refusal too; the signature
				// of the original still covers a body-signed provider's
				// fields.
				d = with(s.signed, dup)
			}
			err = verify(s.p, d)
			if err == nil {
				_, err = s.p.Parse(d)
				require.ErrorIs(t, err, providers.ErrMalformed, "%s named twice must be refused (body %q)", name, d.Body)
				continue
			}
			require.True(t, errors.Is(err, providers.ErrMalformed) || errors.Is(err, providers.ErrUnauthorized),
				"%s named twice: %v", name, err)
		}
	}
	require.NotZero(t, n, "the fixture has no field name to repeat")
}

// KeyStableAcrossRetries signs the provider's retry of the fixture
// (Kit.Retry, or Kit.Resend) RetryDelay later: it must verify and have the
// same key, type and fingerprint (every item's), and the first attempt
// must still verify.
func (k Kit) KeyStableAcrossRetries(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	retry := bytes.Clone(fixture)
	if k.Retry != nil {
		retry = k.Retry(retry)
	}
	if k.Resend == nil {
		require.NotEqual(t, fixture, retry, "Kit.Retry must change the body")
	}
	s.clock.advance(RetryDelay)
	d, err := k.sameEvent(s, retry)
	require.NoError(t, err)
	if k.Resend != nil {
		require.NotEqual(t, s.signed.Header, d.Header, "a retry is signed afresh: Kit.Resend must change the headers")
	}
	require.NoError(t, verify(s.p, d), "the retry must verify")
	got, err := events(s.p, d)
	require.NoError(t, err)
	require.Equal(t, s.events, got, "a retry of one event must have the same key, type and fingerprint (every item's)")
	require.NoError(t, verify(s.p, s.signed), "the first attempt still verifies")
}

// ChangedPayloadChangesFingerprint signs Kit.Change of the fixture: the
// same keys, another fingerprint, or a changed payload would be answered
// as a replay of the first instead of 422.
func (k Kit) ChangedPayloadChangesFingerprint(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	changed := k.Change(bytes.Clone(fixture))
	require.NotEqual(t, fixture, changed, "Kit.Change must change the body")
	d, err := k.sameEvent(s, changed)
	require.NoError(t, err)
	require.NoError(t, verify(s.p, d), "the changed body must verify")
	got, err := events(s.p, d)
	require.NoError(t, err)
	require.Equal(t, keysOf(s.events), keysOf(got), "Kit.Change must keep the event keys")
	require.NotEqual(t, fingerprintsOf(s.events), fingerprintsOf(got),
		"a changed payload under the same key must change the fingerprint: else it is answered as a replay of the first instead of 422")
}

// NetworkDownUnavailable checks, for an adapter with Kit.Unreachable, that
// a signed delivery is refused with providers.ErrUnavailable (503, so that
// the provider retries) and never providers.ErrUnauthorized while the
// network is down.
func (k Kit) NetworkDownUnavailable(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	if k.Unreachable == nil {
		t.Log("does not apply: verification needs no network")
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	down, err := k.Unreachable([]string{k.Secrets[0]}, s.clock.get)
	require.NoError(t, err, "Kit.Unreachable")
	err = verify(down, s.signed)
	require.ErrorIs(t, err, providers.ErrUnavailable, "a signed delivery whose check cannot reach the network")
	require.NotErrorIs(t, err, providers.ErrUnauthorized, "a genuine delivery must not be refused as forged while the network is down")
}

// BatchItemsStandAlone checks, for a batch provider (Ack not nil), that
// every item's forwarded body verifies and parses into that one item, and
// that the provider states how an item is tampered with (Kit.TamperItem).
func (k Kit) BatchItemsStandAlone(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	if providers.AckOf(s.p) == nil {
		t.Log("does not apply: a request carries one event")
		return
	}
	require.NotNil(t, k.TamperItem, "a batch provider needs Kit.TamperItem")
	items, err := s.p.Parse(s.signed)
	require.NoError(t, err)
	require.NotEmpty(t, items)
	for i, it := range items {
		alone := with(s.signed, it.Body)
		require.NoError(t, verify(s.p, alone), "item %d's forwarded body", i)
		one, err := s.p.Parse(alone)
		require.NoError(t, err, "item %d's forwarded body", i)
		require.Equal(t, []providers.Item{it}, one, "item %d's forwarded body is that item alone", i)
	}
}

// DistinctEventsDistinct checks that no two fixtures share an event key:
// each fixture signed, or parsed as it is for an adapter that cannot sign.
func (k Kit) DistinctEventsDistinct(t *testing.T, fixtures []fixture) {
	keys := map[string]string{}
	for _, f := range fixtures {
		var evs []providers.Event
		if k.cannotSign(t, f.body) != "" {
			var err error
			evs, err = events(k.adapter(t, newClock(), k.Secrets[0]), providers.Delivery{Body: bytes.Clone(f.body)})
			require.NoError(t, err, "%s must parse", f.name)
		} else {
			evs = k.sign(t, bytes.Clone(f.body)).events
		}
		for _, ev := range evs {
			if other, dup := keys[ev.Key]; dup {
				t.Errorf("%s and %s have the same event key %q: distinct events need distinct keys", other, f.name, ev.Key)
			}
			keys[ev.Key] = f.name
		}
	}
}

// sameEvent signs body as another delivery of the event s was: with Resend
// for a provider keyed by a header, else with Sign (the key is in the body).
func (k Kit) sameEvent(s subject, body []byte) (providers.Delivery, error) {
	if k.Resend != nil {
		return k.Resend(s.p, s.signed, body)
	}
	return providers.Sign(s.p, body)
}

// StaleRefused checks that a delivery verified Kit.Tolerance and a minute
// after it was signed is refused with reason timestamp_outside_tolerance.
// It does not apply without a Tolerance.
func (k Kit) StaleRefused(t *testing.T, fixture []byte) {
	if k.signless(t, fixture) {
		return
	}
	if k.Tolerance <= 0 {
		t.Log("does not apply: no signed timestamp (Kit.Tolerance)")
		return
	}
	s := k.sign(t, bytes.Clone(fixture))
	s.clock.advance(k.Tolerance + time.Minute)
	requireRefused(t, s.p, s.signed, "verified %s after signing", k.Tolerance+time.Minute)
	requireReason(t, s.p, s.signed, providers.ReasonTimestamp, "verified %s after signing", k.Tolerance+time.Minute)
}
