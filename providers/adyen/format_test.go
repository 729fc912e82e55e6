package adyen_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
)

// reading is one way to read an item's signed text into its eight fields.
type reading struct {
	psp, original, merchant, reference, value, currency, eventCode, success string
}

func (r reading) text() string {
	return strings.Join([]string{r.psp, r.original, r.merchant, r.reference, r.value, r.currency, r.eventCode, r.success}, ":")
}

// item is r as a notification item carrying sig. A value that is not an
// integer is sent as a string, which no reading may accept either.
func (r reading) item(sig string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	amount := ""
	switch {
	case r.value == "" && r.currency == "":
	case r.value == "":
		amount = `"amount":{"currency":` + q(r.currency) + `},`
	default:
		v := q(r.value)
		if n, err := strconv.ParseInt(r.value, 10, 64); err == nil && strconv.FormatInt(n, 10) == r.value {
			v = r.value
		}
		amount = `"amount":{"currency":` + q(r.currency) + `,"value":` + v + `},`
	}
	return `{"NotificationRequestItem":{"additionalData":{"hmacSignature":` + q(sig) + `},` + amount +
		`"eventCode":` + q(r.eventCode) + `,"merchantAccountCode":` + q(r.merchant) + `,"merchantReference":` + q(r.reference) +
		`,"originalReference":` + q(r.original) + `,"pspReference":` + q(r.psp) + `,"success":` + q(r.success) + `}}`
}

// readings returns every way to cut text into eight fields at its colons.
func readings(text string) []reading {
	tokens := strings.Split(text, ":")
	var out []reading
	var cut func(start int, fields []string)
	cut = func(start int, fields []string) {
		if len(fields) == 7 {
			f := append(fields, strings.Join(tokens[start:], ":"))
			out = append(out, reading{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]})
			return
		}
		for end := start + 1; end <= len(tokens)-(7-len(fields)); end++ {
			cut(end, append(append([]string(nil), fields...), strings.Join(tokens[start:end], ":")))
		}
	}
	cut(0, nil)
	return out
}

// TestOneReading signs genuine items whose free text holds colons, then
// sends every other reading of each signed text under the same
// hmacSignature: exactly one reading, the genuine one, verifies. Among the
// others is the reviewer's attack, text moved into merchantAccountCode
// through an originalReference of ":ShopECOM", which without the formats
// verifies and makes a second event key.
func TestOneReading(t *testing.T) {
	a := newAdapter(t, vecKey)
	genuine := []reading{
		{"8816178952380553", "", "ShopECOM", "order:42", "1000", "EUR", "AUTHORISATION", "true"},
		{"8816178952380553", "8816178952380001", "ShopECOM", "a:b:c", "1000", "EUR", "REFUND", "false"},
		{"8816178952380553", "", "Shop_ECOM", "::", "", "", "REPORT_AVAILABLE", "true"},
		{"8816178952380553", "", "ShopECOM", "42:", "0", "IDR", "CAPTURE", "true"},
		{"pspReference", "originalReference", "merchantAccount", "ref:1000:EUR", "1000", "EUR", "EVENT", "true"},
	}
	for _, g := range genuine {
		t.Run(g.reference, func(t *testing.T) {
			sig := adyen.ItemSignature(mustHex(t, vecKey), g.text())
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: notification(g.item(sig))}), "a genuine item with colons in merchantReference is accepted")
			all := readings(g.text())
			require.Greater(t, len(all), 1)
			accepted := 0
			for _, r := range all {
				require.Equal(t, g.text(), r.text())
				err := a.Verify(context.Background(), providers.Delivery{Body: notification(r.item(sig))})
				if err == nil {
					accepted++
					require.Equal(t, g, r, "only the genuine reading verifies")
					continue
				}
				require.ErrorIs(t, err, providers.ErrUnauthorized)
			}
			require.Equal(t, 1, accepted, "of %d readings", len(all))
		})
	}
}

// TestReviewersAttack is the attack, spelled out.
func TestReviewersAttack(t *testing.T) {
	a := newAdapter(t, vecKey)
	g := reading{"8816178952380553", "", "ShopECOM", "order:42", "1000", "EUR", "AUTHORISATION", "true"}
	sig := adyen.ItemSignature(mustHex(t, vecKey), g.text())
	moved := g
	moved.original, moved.merchant, moved.reference = ":ShopECOM", "order", "42"
	require.Equal(t, g.text(), moved.text(), "one signed text")
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: notification(g.item(sig))}))
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: notification(moved.item(sig))}), adyen.ErrFieldFormat)
	intoMerchant := g
	intoMerchant.merchant, intoMerchant.reference = "ShopECOM:order", "42"
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: notification(intoMerchant.item(sig))}), adyen.ErrFieldFormat)
}

// TestFieldFormats signs items whose fields break their documented format:
// each is refused, though its signature is right; each genuine spelling
// is accepted.
func TestFieldFormats(t *testing.T) {
	a := newAdapter(t, vecKey)
	base := reading{"8816178952380553", "", "ShopECOM", "order-1", "1000", "EUR", "AUTHORISATION", "true"}
	tests := []struct {
		name   string
		edit   func(*reading)
		wantOK bool
	}{
		{"production item", func(*reading) {}, true},
		{"Adyen's library vector", func(r *reading) {
			*r = reading{"pspReference", "originalReference", "merchantAccount", "reference", "1000", "EUR", "EVENT", "true"}
		}, true},
		{"originalReference", func(r *reading) { r.original = "8816178952380001" }, true},
		{"no amount", func(r *reading) { r.value, r.currency = "", "" }, true},
		{"eventCode with digits", func(r *reading) { r.eventCode = "EVENT_2" }, true},
		{"merchant with an underscore", func(r *reading) { r.merchant = "Shop_ECOM_01" }, true},
		{"merchantReference anything", func(r *reading) { r.reference = "ä :/\\ x" }, true},
		{"empty pspReference", func(r *reading) { r.psp = "" }, false},
		{"pspReference with a dash", func(r *reading) { r.psp = "8816-1789" }, false},
		{"pspReference with a colon", func(r *reading) { r.psp = "8816:1789" }, false},
		{"originalReference with a colon", func(r *reading) { r.original = ":ShopECOM" }, false},
		{"merchantAccountCode with a colon", func(r *reading) { r.merchant = "Shop:ECOM" }, false},
		{"currency lowercase", func(r *reading) { r.currency = "eur" }, false},
		{"currency of four letters", func(r *reading) { r.currency = "EURO" }, false},
		{"currency with a colon", func(r *reading) { r.currency = "E:R" }, false},
		{"eventCode lowercase", func(r *reading) { r.eventCode = "authorisation" }, false},
		{"eventCode empty", func(r *reading) { r.eventCode = "" }, false},
		{"eventCode with a colon", func(r *reading) { r.eventCode = "A:B" }, false},
		{"success TRUE", func(r *reading) { r.success = "TRUE" }, false},
		{"success empty", func(r *reading) { r.success = "" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			tc.edit(&r)
			sig := adyen.ItemSignature(mustHex(t, vecKey), r.text())
			err := a.Verify(context.Background(), providers.Delivery{Body: notification(r.item(sig))})
			if tc.wantOK {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, adyen.ErrFieldFormat)
		})
	}
	// One spelling per amount: -0 is not 0.
	body := strings.Replace(string(notification(base.item(adyen.ItemSignature(mustHex(t, vecKey), strings.Replace(base.text(), ":1000:", ":0:", 1))))), `"value":1000`, `"value":-0`, 1)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: []byte(body)}), adyen.ErrUnreadableBody)
}

func TestMerchantAccounts(t *testing.T) {
	vec := notification(vecItem(vecSignature))
	other := reading{"8816178952380553", "", "OtherShop", "order-1", "1000", "EUR", "AUTHORISATION", "true"}
	otherItem := other.item(adyen.ItemSignature(mustHex(t, vecKey), other.text()))

	a, err := adyen.New([]string{vecKey}, adyen.WithMerchantAccounts([]string{"merchantAccount", "ShopECOM"}))
	require.NoError(t, err)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: vec}))
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: notification(otherItem)}), adyen.ErrMerchantAccount)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: notification(vecItem(vecSignature), otherItem)}), adyen.ErrMerchantAccount, "one item refuses the request")
	// Accounts are checked once every signature holds: a forged item is
	// refused as forged even after another account's genuine one, so an
	// account refusal always concerns a genuine request.
	forged := other.item(strings.Repeat("A", 43) + "=")
	err = a.Verify(context.Background(), providers.Delivery{Body: notification(otherItem, forged)})
	require.ErrorIs(t, err, adyen.ErrNoValidSignature)
	require.Equal(t, providers.ReasonSignatureInvalid, providers.Reason(err))
	require.NoError(t, newAdapter(t, vecKey).Verify(context.Background(), providers.Delivery{Body: notification(otherItem)}), "unset, any account")

	for _, bad := range [][]string{nil, {""}, {"a", " b"}, {"a:b"}} {
		_, err := adyen.New([]string{vecKey}, adyen.WithMerchantAccounts(bad))
		require.Error(t, err, "%q", bad)
	}
}

func TestSettingsMerchantAccounts(t *testing.T) {
	env := providers.Env{Var: func(n string) string { return "WEBHOOKD_" + n }}
	s := adyen.Settings{HMACKeys: []string{vecKey}, MerchantAccounts: []string{"merchantAccount"}}
	require.NoError(t, s.Check(env))
	p, err := s.Build()
	require.NoError(t, err)
	require.NoError(t, p.Verify(context.Background(), providers.Delivery{Body: notification(vecItem(vecSignature))}))
	s.MerchantAccounts = []string{"merchantAccount", "bad:one"}
	require.ErrorContains(t, s.Check(env), "WEBHOOKD_ADYEN_MERCHANT_ACCOUNTS: adyen: merchant account 2 of 2")
}

// FuzzOneReading: for any merchantReference (and merchant account without
// a colon), of all the readings of a genuine item's signed text exactly
// one, the genuine one, verifies under its signature.
func FuzzOneReading(f *testing.F) {
	f.Add("order:42", "ShopECOM", "1000", "EUR")
	f.Add("::", "Shop_ECOM", "", "")
	f.Add("a:1000:EUR:AUTHORISATION", "m", "0", "IDR")
	key := mustHex(f, vecKey)
	a := newAdapter(f, vecKey)
	f.Fuzz(func(t *testing.T, reference, merchant, value, currency string) {
		g := reading{"8816178952380553", "", merchant, reference, value, currency, "AUTHORISATION", "true"}
		sig := adyen.ItemSignature(key, g.text())
		if a.Verify(context.Background(), providers.Delivery{Body: notification(g.item(sig))}) != nil || strings.Count(g.text(), ":") > 12 {
			return // not a genuine item (or too many readings to try)
		}
		for _, r := range readings(g.text()) {
			if r != g && a.Verify(context.Background(), providers.Delivery{Body: notification(r.item(sig))}) == nil {
				t.Fatalf("%+v verifies under the signature of %+v", r, g)
			}
		}
	})
}
