package paypal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/providertest"
)

func parser(t *testing.T) *paypal.Adapter {
	a, err := paypal.New([]string{webhookID})
	require.NoError(t, err)
	return a
}

func TestParseFixtures(t *testing.T) {
	want := map[string]struct{ key, typ string }{
		"checkout_order_approved.json":   {"WH-3CN81045FG2209714-6LP90315ZA7718253", "CHECKOUT.ORDER.APPROVED"},
		"payment_capture_completed.json": {"WH-7WD58212KL104362H-4RH63195UV8822031", "PAYMENT.CAPTURE.COMPLETED"},
		"payment_capture_denied.json":    {"WH-9EV36650JT4471808-2KC15584WR6603917", "PAYMENT.CAPTURE.DENIED"},
		"payment_capture_refunded.json":  {"WH-1AB29874QX5563120-8TT47721MN3390442", "PAYMENT.CAPTURE.REFUNDED"},
	}
	names := fixtureNames(t)
	require.Len(t, names, len(want))
	for _, name := range names {
		ev, err := providertest.OneEvent(parser(t).Parse(providers.Delivery{Body: readFixture(t, name)}))
		require.NoError(t, err, name)
		require.Equal(t, want[name].key, ev.Key, name)
		require.Equal(t, want[name].typ, ev.Type, name)
	}
}

func TestParseRules(t *testing.T) {
	tests := []struct {
		name, body string
		key        string
		err        error
	}{
		{"id and event_type", `{"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED"}`, "WH-1", nil},
		{"no id", `{"event_type":"X"}`, "", paypal.ErrNoEventKey},
		{"id not a string", `{"id":1,"event_type":"X"}`, "", paypal.ErrNoEventKey},
		{"id with a space", `{"id":"WH 1","event_type":"X"}`, "", paypal.ErrNoEventKey},
		{"no event_type", `{"id":"WH-1"}`, "", paypal.ErrInvalidEventType},
		{"id named twice", `{"id":"WH-1","ID":"WH-2","event_type":"X"}`, "", paypal.ErrNotJSON},
		{"not JSON", `id=WH-1`, "", paypal.ErrNotJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(parser(t).Parse(providers.Delivery{Body: []byte(tt.body)}))
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
	fp := func(body string) string {
		ev, err := providertest.OneEvent(parser(t).Parse(providers.Delivery{Body: []byte(body)}))
		require.NoError(t, err)
		return ev.Fingerprint
	}
	const base = `{"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"amount":{"value":"10.00"}}`
	require.Equal(t, fp(base+`}`), fp(base+`,"links":[{"rel":"self"}],"new_member":1}`), "links and unknown members do not count")
	require.NotEqual(t, fp(base+`}`), fp(`{"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"amount":{"value":"11.00"}}}`), "the resource counts")
}
