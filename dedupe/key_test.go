package dedupe_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    dedupe.Key
		stored string
		id     string
	}{
		{"the default destination is stored as keys were before destinations",
			dedupe.Key{Source: "stripe", Event: "evt_1"}, "stripe:evt_1", "stripe:evt_1"},
		{"an event key holding colons stays whole",
			dedupe.Key{Source: "xendit", Event: "invoice.paid:inv_1"}, "xendit:invoice.paid:inv_1", "xendit:invoice.paid:inv_1"},
		{"another destination is its own record, with the same Idempotency-Key",
			dedupe.Key{Source: "stripe-eu", Event: "evt_1", Destination: "ledger"}, "stripe-eu:evt_1\x1fledger", "stripe-eu:evt_1"},
		{"UTF-8 event keys",
			dedupe.Key{Source: "2c2p", Event: "inv-é:00"}, "2c2p:inv-é:00", "2c2p:inv-é:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.key.Check())
			require.Equal(t, tc.stored, tc.key.String())
			require.Equal(t, tc.id, tc.key.ID())
			back, err := dedupe.ParseKey(tc.stored)
			require.NoError(t, err)
			require.Equal(t, tc.key, back)
		})
	}
}

func TestNewKeyDefaultDestination(t *testing.T) {
	k, err := dedupe.NewKey("stripe", "evt_1", dedupe.DefaultDestination)
	require.NoError(t, err)
	require.Equal(t, "stripe:evt_1", k.String())
	require.Equal(t, dedupe.DefaultDestination, k.DestinationName())
	k, err = dedupe.NewKey("stripe", "evt_1", "billing")
	require.NoError(t, err)
	require.Equal(t, "billing", k.DestinationName())
}

// TestKeyRefused holds the one check every backend makes (CheckKey): what
// one refuses, all refuse, so no key is valid on LMDB and not on Postgres.
func TestKeyRefused(t *testing.T) {
	long := strings.Repeat("e", dedupe.MaxKeyLen-len("stripe:"))
	require.NoError(t, dedupe.CheckKey("stripe:"+long), "exactly MaxKeyLen")
	for _, tc := range []struct{ name, stored string }{
		{"empty", ""},
		{"no source", ":evt_1"},
		{"no separator", "stripe"},
		{"no event key", "stripe:"},
		{"upper-case source", "Stripe:evt_1"},
		{"source starting with a hyphen", "-stripe:evt_1"},
		{"source too long", strings.Repeat("s", 64) + ":evt_1"},
		{"over MaxKeyLen", "stripe:" + long + "x"},
		{"over MaxKeyLen by its destination", "stripe:" + long[:len(long)-3] + "\x1fabcd"},
		{"NUL in the event key", "stripe:evt\x001"},
		{"control character in the event key", "stripe:evt\n1"},
		{"not UTF-8", "stripe:evt\xff"},
		{"empty destination", "stripe:evt_1\x1f"},
		{"invalid destination", "stripe:evt_1\x1fLedger"},
		{"the default destination spelt out", "stripe:evt_1\x1fdefault"},
		{"two destinations", "stripe:evt_1\x1fa\x1fb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, dedupe.CheckKey(tc.stored), dedupe.ErrInvalidKey)
			_, err := dedupe.ParseKey(tc.stored)
			require.ErrorIs(t, err, dedupe.ErrInvalidKey)
		})
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"stripe": true, "2c2p": true, "stripe-eu": true, "a": true, strings.Repeat("a", 63): true,
		"": false, "-a": false, "A": false, "a_b": false, "a.b": false, "a:b": false, strings.Repeat("a", 64): false,
	} {
		require.Equal(t, ok, dedupe.ValidName(name), name)
	}
}

// FuzzParseKey: a stored key splits back one way, and what ParseKey
// accepts Check accepts and String gives back unchanged.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"stripe:evt_1", "stripe-eu:evt_1\x1fledger", "xendit:a:b", "a:\x1f", "a:b\x1fdefault", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := dedupe.ParseKey(s)
		if err != nil {
			require.ErrorIs(t, err, dedupe.ErrInvalidKey)
			return
		}
		require.NoError(t, k.Check())
		require.Equal(t, s, k.String())
		require.LessOrEqual(t, len(s), dedupe.MaxKeyLen)
	})
}
