package providertest

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// Example is a delivery the provider published with the secret that signs
// it: in its documentation or an official SDK's tests. It proves that the
// adapter agrees with the provider, not only with its own Sign: a signed
// part that Sign and Verify both leave out (a notification URL, a header)
// passes every other property.
type Example struct {
	// Source is where the example is published: a documentation URL, or an
	// official SDK's repository and test file.
	Source string
	// Secret is the secret (key, token, webhook id) that signed it.
	Secret string
	// New builds the adapter with the example's settings (a merchant code,
	// a notification path, a certificate host) accepting secrets; nil
	// uses Kit.New.
	New func(secrets []string, now func() time.Time) (providers.Provider, error)
	// Now is when the example is checked: inside the tolerance of a signed
	// timestamp. Zero is the current time.
	Now time.Time
	// Delivery is the example's request: headers, query and body as
	// published.
	Delivery providers.Delivery
	// Keys, when set, are the event keys Parse must derive, in order.
	Keys []string
}

// PublishedExample checks each of Kit.Examples: it verifies and parses into
// usable events (with the example's Keys) under its secret alone and as
// the second of two, and is refused under another secret and, unless the
// provider signs no body, with one byte of its body changed. Without
// examples it fails, unless Kit.SelfDerived says why there is none.
func (k Kit) PublishedExample(t *testing.T) {
	if len(k.Examples) == 0 {
		require.NotEmpty(t, k.SelfDerived,
			"state a published example (Kit.Examples: headers, body, secret and settings from the provider's docs or official SDK tests, with the source), or why there is none (Kit.SelfDerived)")
		t.Log("no published example:", k.SelfDerived)
		return
	}
	for _, ex := range k.Examples {
		t.Run(ex.Source, func(t *testing.T) { k.example(t, ex) })
	}
}

func (k Kit) example(t *testing.T, ex Example) {
	require.NotEmpty(t, ex.Source, "Example.Source: where is it published?")
	require.NotEmpty(t, ex.Secret, "Example.Secret")
	build := ex.New
	if build == nil {
		build = k.New
	}
	now := time.Now
	if !ex.Now.IsZero() {
		now = func() time.Time { return ex.Now }
	}
	adapter := func(secrets ...string) providers.Provider {
		t.Helper()
		p, err := build(secrets, now)
		require.NoError(t, err, "building the example's adapter")
		return p
	}
	d := ex.Delivery
	p := adapter(ex.Secret)
	require.NoError(t, verify(p, d), "the published example must verify")
	got, err := events(p, d)
	require.NoError(t, err, "the published example must parse")
	require.NotEmpty(t, got)
	for _, ev := range got {
		requireUsable(t, p.Name(), ev)
	}
	if ex.Keys != nil {
		require.Equal(t, ex.Keys, keysOf(got), "the published example's event keys")
	}
	other := k.Secrets[0]
	if other == ex.Secret {
		other = k.Secrets[1]
	}
	if k.SingleSecret == "" {
		require.NoError(t, verify(adapter(other, ex.Secret), d), "the example's secret configured second")
	}
	requireRefused(t, adapter(other), d, "the example under another secret")
	if !k.BodyUnsigned && k.TamperItem == nil && k.SignedFields == nil {
		at := len(d.Body) / 2
		requireRefused(t, p, with(d, flipAt(bytes.Clone(d.Body), at)), "the example with body byte %d changed", at)
	}
}
