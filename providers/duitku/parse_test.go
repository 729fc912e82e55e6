package duitku_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/providertest"
)

func TestParseFixtures(t *testing.T) {
	want := map[string]struct{ key, typ string }{
		"credit_card_failed.json": {"INV-2024-000732:DS1578224L3RB7YD2C6XGF:01", "01"},
		"ovo_success.json":        {"INV-2024-000733:DS1578224M9TC4NH8E1WJK:00", "00"},
		"qris_success.json":       {"INV-2024-000734:DS1578224N4VF6PK3A9ZQM:00", "00"},
		"va_bca_success.json":     {"INV-2024-000731:DS1578224K8QZ3WVT5N2HJ:00", "00"},
		"va_mandiri_failed.json":  {"INV-2024-000735:DS1578224P7WH2QL5B8YRN:01", "01"},
	}
	a := newAdapter(t, fixtureMerchant, fixtureKey)
	names := fixtureNames(t)
	require.Len(t, names, len(want))
	for _, name := range names {
		body := readFixture(t, name)
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}), name)
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		require.NoError(t, err, name)
		require.Equal(t, want[name].key, ev.Key, name)
		require.Equal(t, want[name].typ, ev.Type, name)
	}
}

func TestParseKeyRules(t *testing.T) {
	a := newAdapter(t, vecMerchant, vecKey)
	base := "merchantCode=D0001&amount=1&"
	tests := []struct {
		name, body, key string
		err             error
	}{
		{"escaped values are unescaped", base + "merchantOrderId=INV%2F7&reference=R1&resultCode=00", "INV/7:R1:00", nil},
		{"the merchant's order id may hold a colon", base + "merchantOrderId=a:b&reference=R1&resultCode=00", "a:b:R1:00", nil},
		{"reference may not", base + "merchantOrderId=a&reference=b:R1&resultCode=00", "", duitku.ErrNoEventKey},
		{"result code may not", base + "merchantOrderId=a&reference=R1&resultCode=0:0", "", duitku.ErrNoEventKey},
		{"no reference", base + "merchantOrderId=a&resultCode=00", "", duitku.ErrNoEventKey},
		{"no result code", base + "merchantOrderId=a&reference=R1", "", duitku.ErrNoEventKey},
		{"space in the order id", base + "merchantOrderId=a+b&reference=R1&resultCode=00", "", duitku.ErrNoEventKey},
		{"field given twice", base + "merchantOrderId=a&reference=R1&resultCode=00&resultCode=01", "", duitku.ErrRepeatedField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				require.ErrorIs(t, err, providers.ErrMalformed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.key, ev.Key)
		})
	}
}

func TestFingerprint(t *testing.T) {
	a := newAdapter(t, vecMerchant, vecKey)
	fp := func(body string) string {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(body)}))
		require.NoError(t, err)
		return ev.Fingerprint
	}
	const base = "merchantOrderId=1&reference=R&resultCode=00&amount=10&merchantCode=D0001"
	require.Equal(t, fp(base), fp("merchantCode=D0001&amount=10&resultCode=00&reference=R&merchantOrderId=1"), "field order does not count")
	require.Equal(t, fp(base), fp(base+"&signature=x&newField=y"), "the signature and unknown fields do not count")
	require.Equal(t, fp(base), fp("merchantOrderId=1&reference=%52&resultCode=00&amount=10&merchantCode=D0001"), "values count unescaped")
	require.NotEqual(t, fp(base), fp(base+"&paymentCode=VC"), "a documented field counts")
	require.NotEqual(t, fp(base+"&productDetail="), fp(base), "an empty field is not an absent one")
	require.NotEqual(t, fp(base+"&productDetail=ab&paymentCode=c"), fp(base+"&productDetail=a&paymentCode=bc"), "values cannot run into each other")
}

// TestShiftedKeys: merchantOrderId:reference:resultCode with a ":" moved
// from one part to the next never gives two events one key: the order id
// may hold ":" (the merchant's), reference and resultCode may not, so the
// key splits one way from the right.
func TestShiftedKeys(t *testing.T) {
	a := newAdapter(t, vecMerchant, vecKey)
	form := func(order, ref, code string) []byte {
		return []byte("merchantCode=D0001&amount=1&merchantOrderId=" + order + "&reference=" + ref + "&resultCode=" + code)
	}
	for _, tt := range []struct {
		name string
		a, b []byte
	}{
		{"order id into reference", form("A:B", "R1", "00"), form("A", "B:R1", "00")},
		{"reference into result code", form("A", "R1:0", "0"), form("A", "R1", "0:0")},
	} {
		t.Run(tt.name, func(t *testing.T) { providertest.ShiftedApart(t, a, tt.a, tt.b) })
	}
}
