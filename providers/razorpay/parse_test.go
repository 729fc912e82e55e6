package razorpay_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/razorpay"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

func TestParseFixtures(t *testing.T) {
	tests := []struct{ file, wantKey, wantType string }{
		{"payment_authorized.json", "payment.authorized:pay_WhkP4c8nSLa2Qe:1773480063", "payment.authorized"},
		{"payment_captured.json", "payment.captured:pay_WhkP4c8nSLa2Qe:1773480125", "payment.captured"},
		{"payment_failed.json", "payment.failed:pay_WhkF9mB3wXs7Kd:1773481466", "payment.failed"},
		{"order_paid.json", "order.paid:pay_WhkP4c8nSLa2Qe:1773480126", "order.paid"},
		{"refund_processed.json", "refund.processed:rfnd_WhkR6tN1qVz5Ja:1773566502", "refund.processed"},
	}
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.Len(t, paths, len(tests), "every fixture has a row here")
	a := newAdapter(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: readFixture(t, tt.file)}))
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, ev.Key)
			require.Equal(t, tt.wantType, ev.Type)
			require.Regexp(t, `^[0-9a-f]{64}$`, ev.Fingerprint)
		})
	}
}

// TestParseKeys walks docs/contract.md's Razorpay event key, rule by rule.
func TestParseKeys(t *testing.T) {
	long := strings.Repeat("a", razorpay.MaxFieldBytes)
	env := func(event, contains, payload, created string) string {
		return `{"entity":"event","event":` + event + `,"contains":` + contains + `,"payload":` + payload + `,"created_at":` + created + `}`
	}
	pay := `{"payment":{"entity":{"id":"pay_1","amount":100}}}`
	tests := []struct {
		name    string
		body    string
		wantKey string
		wantErr error
	}{
		{name: "payment", body: env(`"payment.captured"`, `["payment"]`, pay, `1700000000`), wantKey: "payment.captured:pay_1:1700000000"},
		{name: "first of contains wins", body: env(`"refund.created"`, `["refund","payment"]`,
			`{"payment":{"entity":{"id":"pay_1"}},"refund":{"entity":{"id":"rfnd_1"}}}`, `1700000001`), wantKey: "refund.created:rfnd_1:1700000001"},
		{name: "order.paid keys on the payment", body: env(`"order.paid"`, `["payment","order"]`,
			`{"order":{"entity":{"id":"order_1"}},"payment":{"entity":{"id":"pay_1"}}}`, `1700000002`), wantKey: "order.paid:pay_1:1700000002"},
		{name: "same entity, two events", body: env(`"payment.authorized"`, `["payment"]`, pay, `1700000000`), wantKey: "payment.authorized:pay_1:1700000000"},
		{name: "escaped name in contains", body: env(`"payment.captured"`, `["\u0070ayment"]`, pay, `1700000000`), wantKey: "payment.captured:pay_1:1700000000"},
		{name: "longest parts", body: env(`"`+long+`"`, `["payment"]`, `{"payment":{"entity":{"id":"`+long+`"}}}`, `12345678901234567890`),
			wantKey: long + ":" + long + ":12345678901234567890"},

		{name: "no event", body: `{"contains":["payment"],"payload":` + pay + `,"created_at":1}`, wantErr: razorpay.ErrInvalidEventType},
		{name: "event not a string", body: env(`7`, `["payment"]`, pay, `1`), wantErr: razorpay.ErrInvalidEventType},
		{name: "event with a colon", body: env(`"payment:captured"`, `["payment"]`, pay, `1`), wantErr: razorpay.ErrInvalidEventType},
		{name: "event with a space", body: env(`"payment captured"`, `["payment"]`, pay, `1`), wantErr: razorpay.ErrInvalidEventType},
		{name: "event too long", body: env(`"`+long+`a"`, `["payment"]`, pay, `1`), wantErr: razorpay.ErrInvalidEventType},
		{name: "contains empty", body: env(`"payment.captured"`, `[]`, pay, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "contains a string", body: env(`"payment.captured"`, `"payment"`, pay, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "contains a number", body: env(`"payment.captured"`, `[1]`, pay, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "contains missing", body: `{"event":"payment.captured","payload":` + pay + `,"created_at":1}`, wantErr: razorpay.ErrNoEventKey},
		{name: "first of contains not in payload", body: env(`"refund.created"`, `["refund","payment"]`, pay, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "payload not an object", body: env(`"payment.captured"`, `["payment"]`, `[]`, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "no entity", body: env(`"payment.captured"`, `["payment"]`, `{"payment":{"id":"pay_1"}}`, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "entity without id", body: env(`"payment.captured"`, `["payment"]`, `{"payment":{"entity":{"amount":1}}}`, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "id a number", body: env(`"payment.captured"`, `["payment"]`, `{"payment":{"entity":{"id":1}}}`, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "id with a colon", body: env(`"payment.captured"`, `["payment"]`, `{"payment":{"entity":{"id":"pay:1"}}}`, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "id with CRLF", body: env(`"payment.captured"`, `["payment"]`, `{"payment":{"entity":{"id":"p\r\nX: 1"}}}`, `1`), wantErr: razorpay.ErrNoEventKey},
		{name: "no created_at", body: `{"event":"payment.captured","contains":["payment"],"payload":` + pay + `}`, wantErr: razorpay.ErrNoEventKey},
		{name: "created_at a string", body: env(`"payment.captured"`, `["payment"]`, pay, `"1700000000"`), wantErr: razorpay.ErrNoEventKey},
		{name: "created_at negative", body: env(`"payment.captured"`, `["payment"]`, pay, `-1`), wantErr: razorpay.ErrNoEventKey},
		{name: "created_at a fraction", body: env(`"payment.captured"`, `["payment"]`, pay, `1700000000.5`), wantErr: razorpay.ErrNoEventKey},
		{name: "created_at an exponent", body: env(`"payment.captured"`, `["payment"]`, pay, `17e8`), wantErr: razorpay.ErrNoEventKey},
		{name: "created_at null", body: env(`"payment.captured"`, `["payment"]`, pay, `null`), wantErr: razorpay.ErrNoEventKey},
		{name: "created_at too long", body: env(`"payment.captured"`, `["payment"]`, pay, `123456789012345678901`), wantErr: razorpay.ErrNoEventKey},

		{name: "not JSON", body: `event=payment.captured`, wantErr: razorpay.ErrNotJSON},
		{name: "array", body: `[` + env(`"payment.captured"`, `["payment"]`, pay, `1`) + `]`, wantErr: razorpay.ErrNotJSON},
		{name: "event twice", body: `{"event":"payment.failed","event":"payment.captured","contains":["payment"],"payload":` + pay + `,"created_at":1}`, wantErr: razorpay.ErrNotJSON},
		{name: "event twice, another case", body: `{"event":"payment.failed","Event":"payment.captured","contains":["payment"],"payload":` + pay + `,"created_at":1}`, wantErr: razorpay.ErrNotJSON},
		{name: "entity id twice, another case", body: env(`"payment.captured"`, `["payment"]`, `{"payment":{"entity":{"id":"pay_1","ID":"pay_2"}}}`, `1`), wantErr: razorpay.ErrNotJSON},
		{name: "event spelled only another way", body: `{"EVENT":"payment.captured","contains":["payment"],"payload":` + pay + `,"created_at":1}`, wantErr: razorpay.ErrInvalidEventType},
	}
	a := newAdapter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, providers.ErrMalformed)
				require.NotErrorIs(t, err, providers.ErrUnauthorized)
				require.Zero(t, ev)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, ev.Key)
			require.LessOrEqual(t, len(razorpay.Name+":"+ev.Key), dedupe.MaxKeyLen, "the store must take the key")
		})
	}
}

func TestFingerprint(t *testing.T) {
	orig := readFixture(t, "refund_processed.json")
	a := newAdapter(t)
	want, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: orig}))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(orig, &v))
	reencoded, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	tests := []struct {
		name     string
		body     []byte
		wantSame bool
	}{
		{"re-serialised, sorted and indented", reencoded, true},
		{"members reordered", providertest.Reordered(orig), true},
		{"member added later", providertest.WithMember("added_later", `1`)(orig), true},
		{"refund amount changed", []byte(strings.Replace(string(orig), `"amount":85000`, `"amount":8500`, 1)), false},
		{"payment snapshot changed", []byte(strings.Replace(string(orig), `"refund_status":"partial"`, `"refund_status":"full"`, 1)), false},
		{"account changed", []byte(strings.Replace(string(orig), `acc_WhkD7Lq2Rt9VbN`, `acc_WhkD7Lq2Rt9VbM`, 1)), false},
		{"contains changed", []byte(strings.Replace(string(orig), `["refund","payment"]`, `["refund"]`, 1)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: tt.body}))
			require.NoError(t, err)
			require.Equal(t, want.Key, got.Key)
			require.Equal(t, tt.wantSame, want.Fingerprint == got.Fingerprint)
		})
	}
}

// TestShiftedKeys: event:id:created_at with a ":" moved from one part to
// the next never gives two events one key (no part may hold ":").
func TestShiftedKeys(t *testing.T) {
	body := func(event, id, created string) []byte {
		return []byte(`{"entity":"event","event":"` + event + `","contains":["payment"],"payload":{"payment":{"entity":{"id":"` + id + `"}}},"created_at":` + created + `}`)
	}
	a := newAdapter(t)
	for _, tt := range []struct {
		name string
		a, b []byte
	}{
		{"event into id", body("payment.captured:pay_1", "2", "1"), body("payment.captured", "pay_1:2", "1")},
		{"id into created_at", body("payment.captured", "pay_1:2", "3"), body("payment.captured", "pay_1", "2:3")},
	} {
		t.Run(tt.name, func(t *testing.T) { providertest.ShiftedApart(t, a, tt.a, tt.b) })
	}
}
