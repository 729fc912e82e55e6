package adyen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/providers/providertest"
)

const (
	fixtures = "../../fixtures/adyen"
	// exampleKey signs the fixtures as committed (cmd/webhookd's tests
	// enable Adyen with it).
	exampleKey = "44782def547aaa06c910c43932b1eb0c71fc68d9d0c057550c48ec2acf6ba056"
	otherKey   = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	// vecKey, vecText and vecSignature are the standard webhook vector of
	// Adyen's Go library (src/hmacvalidator/hmacvalidator_test.go,
	// https://github.com/Adyen/adyen-go-api-library).
	vecKey       = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	vecText      = "pspReference:originalReference:merchantAccount:reference:1000:EUR:EVENT:true"
	vecSignature = "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="
)

// vecItem is the vector's item as a notification item carrying sig.
func vecItem(sig string) string {
	return `{"NotificationRequestItem":{"additionalData":{"hmacSignature":"` + sig + `"},` +
		`"amount":{"currency":"EUR","value":1000},"eventCode":"EVENT","merchantAccountCode":"merchantAccount",` +
		`"merchantReference":"reference","originalReference":"originalReference","pspReference":"pspReference","success":"true"}}`
}

func notification(items ...string) []byte {
	return []byte(`{"live":"false","notificationItems":[` + strings.Join(items, ",") + `]}`)
}

func newAdapter(t testing.TB, keys ...string) *adyen.Adapter {
	t.Helper()
	if len(keys) == 0 {
		keys = []string{exampleKey}
	}
	a, err := adyen.New(keys)
	require.NoError(t, err)
	return a
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	require.NoError(t, err)
	return b
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range []byte(s[2*i : 2*i+2]) {
			switch {
			case c >= '0' && c <= '9':
				v = v<<4 | (c - '0')
			case c >= 'a' && c <= 'f':
				v = v<<4 | (c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				v = v<<4 | (c - 'A' + 10)
			}
		}
		b[i] = v
	}
	return b
}

// TestVector reproduces the official standard webhook vector, both as the
// signature of the signed string and as a whole notification that Verify
// accepts (and Sign reproduces).
func TestVector(t *testing.T) {
	require.Equal(t, vecSignature, adyen.ItemSignature(mustHex(t, vecKey), vecText))
	a := newAdapter(t, vecKey)
	body := notification(vecItem(vecSignature))
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}))
	sd, err := a.Sign(notification(vecItem("")))
	signed := sd.Body
	require.NoError(t, err)
	require.Equal(t, string(body), string(signed))
	// The key is hex: its lower-case spelling is the same key.
	require.NoError(t, newAdapter(t, strings.ToLower(vecKey)).Verify(context.Background(), providers.Delivery{Body: body}))
}

// TestVerifyTamper changes one signed field of the vector item at a time:
// each must be refused, and the unsigned ones must not matter.
func TestVerifyTamper(t *testing.T) {
	a := newAdapter(t, vecKey)
	good := vecItem(vecSignature)
	tests := []struct {
		name    string
		item    string
		wantErr error
	}{
		{"untouched", good, nil},
		{"eventDate added (unsigned)", strings.Replace(good, `"success"`, `"eventDate":"2026-01-01T00:00:00+01:00","success"`, 1), nil},
		{"reason added (unsigned)", strings.Replace(good, `"success"`, `"reason":"anything","success"`, 1), nil},
		{"members reordered", strings.Replace(strings.Replace(good, `"eventCode":"EVENT",`, ``, 1), `"success"`, `"eventCode":"EVENT","success"`, 1), nil},
		{"pspReference", strings.Replace(good, `"pspReference":"pspReference"`, `"pspReference":"pspReferencf"`, 1), adyen.ErrNoValidSignature},
		{"originalReference", strings.Replace(good, `"originalReference":"originalReference"`, `"originalReference":"originalReferencf"`, 1), adyen.ErrNoValidSignature},
		{"originalReference removed", strings.Replace(good, `"originalReference":"originalReference",`, ``, 1), adyen.ErrNoValidSignature},
		{"merchantAccountCode", strings.Replace(good, `"merchantAccount"`, `"merchantAccounu"`, 1), adyen.ErrNoValidSignature},
		{"merchantReference", strings.Replace(good, `"merchantReference":"reference"`, `"merchantReference":"referencf"`, 1), adyen.ErrNoValidSignature},
		{"amount value", strings.Replace(good, `"value":1000`, `"value":1001`, 1), adyen.ErrNoValidSignature},
		{"amount value as a float", strings.Replace(good, `"value":1000`, `"value":1000.0`, 1), adyen.ErrUnreadableBody},
		{"amount value as a string", strings.Replace(good, `"value":1000`, `"value":"1000"`, 1), adyen.ErrUnreadableBody},
		{"currency", strings.Replace(good, `"EUR"`, `"USD"`, 1), adyen.ErrNoValidSignature},
		{"eventCode", strings.Replace(good, `"EVENT"`, `"EVENU"`, 1), adyen.ErrNoValidSignature},
		{"success", strings.Replace(good, `"success":"true"`, `"success":"false"`, 1), adyen.ErrNoValidSignature},
		{"success as a boolean", strings.Replace(good, `"success":"true"`, `"success":true`, 1), adyen.ErrUnreadableBody},
		{"signature byte", strings.Replace(good, vecSignature, "j"+vecSignature[1:], 1), adyen.ErrNoValidSignature},
		{"signature not base64", strings.Replace(good, vecSignature, "*"+vecSignature[1:], 1), adyen.ErrNoValidSignature},
		{"signature of another spelling", strings.Replace(good, vecSignature, vecSignature[:42]+"J=", 1), adyen.ErrNoValidSignature},
		{"signature empty", vecItem(""), adyen.ErrNotSigned},
		{"signature missing", strings.Replace(good, `"additionalData":{"hmacSignature":"`+vecSignature+`"},`, ``, 1), adyen.ErrNotSigned},
		{"pspReference twice, another case", strings.Replace(good, `"pspReference":`, `"PSPReference":"x","pspReference":`, 1), adyen.ErrUnreadableBody},
		{"pspReference spelled only another way", strings.Replace(good, `"pspReference":`, `"PspReference":`, 1), adyen.ErrUnreadableBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Verify(context.Background(), providers.Delivery{Body: notification(tt.item)})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
		})
	}
}

// TestVerifyBatch: every item must verify; one forged item, wherever it is,
// refuses the request; any configured key signs an item.
func TestVerifyBatch(t *testing.T) {
	a := newAdapter(t, exampleKey, vecKey)
	batch := readFixture(t, "batch_of_three.json")
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: batch}))
	items, err := a.Parse(providers.Delivery{Body: batch})
	require.NoError(t, err)
	require.Len(t, items, 3)
	// The vector item signed with the second key, amid the batch.
	mixed := bytes.Replace(batch, []byte(`"notificationItems": [`), []byte(`"notificationItems": [`+vecItem(vecSignature)+`,`), 1)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: mixed}))
	for i, psp := range []string{"WHKD2F7B4C9A1E86", "WHKD9A5E2D6B3C07", "WHKD5C1F8E3A7B98"} {
		forged := bytes.Replace(batch, []byte(`"pspReference": "`+psp), []byte(`"pspReference": "X`+psp[1:]), 1)
		err := a.Verify(context.Background(), providers.Delivery{Body: forged})
		require.ErrorIs(t, err, adyen.ErrNoValidSignature, "item %d forged", i+1)
		require.Contains(t, err.Error(), "item "+string(rune('1'+i))+" of 3")
	}
	require.ErrorIs(t, newAdapter(t, otherKey).Verify(context.Background(), providers.Delivery{Body: batch}), adyen.ErrNoValidSignature)
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: []byte(`{"live":"false","notificationItems":[]}`)}), adyen.ErrNoItems)
	for _, body := range []string{``, `[]`, `{"live":"false"}`, `{"notificationItems":[]}`, `{"live":"false","notificationItems":{}}`,
		`{"live":"false","notificationItems":null}`,
		`{"live":"false","notificationItems":[1]}`, `{"live":"false","notificationItems":[{"Other":{}}]}`,
		`{"live":"false","notificationItems":[{"NotificationRequestItem":[]}]}`,
		`{"live":"false","notificationItems":[{"NotificationRequestItem":null}]}`} {
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: []byte(body)}), adyen.ErrUnreadableBody, body)
	}
	var zero adyen.Adapter
	require.ErrorIs(t, zero.Verify(context.Background(), providers.Delivery{Body: batch}), adyen.ErrNotConfigured)
}

func TestMaxItems(t *testing.T) {
	a := newAdapter(t, vecKey)
	items := make([]string, adyen.MaxItems)
	for i := range items {
		items[i] = vecItem(vecSignature)
	}
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: notification(items...)}))
	require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: notification(append(items, vecItem(vecSignature))...)}), adyen.ErrUnreadableBody)
}

func TestBasicAuth(t *testing.T) {
	a, err := adyen.New([]string{exampleKey}, adyen.WithBasicAuth("adyen:s3cret:with:colons"))
	require.NoError(t, err)
	signed, err := a.Sign(readFixture(t, "capture.json"))
	body, h := signed.Body, signed.Header
	require.NoError(t, err)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}))
	tests := []struct {
		name string
		auth []string
	}{
		{"missing", nil},
		{"empty", []string{""}},
		{"wrong password", []string{"Basic YWR5ZW46czNjcmV0"}},
		{"twice", []string{h.Get("Authorization"), h.Get("Authorization")}},
		{"bearer", []string{"Bearer adyen:s3cret:with:colons"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Verify(context.Background(), providers.Delivery{Header: map[string][]string{"Authorization": tt.auth}, Body: body})
			require.ErrorIs(t, err, adyen.ErrBasicAuth)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
		})
	}
	for _, bad := range []string{"", "nocolon", ":password"} {
		_, err := adyen.New([]string{exampleKey}, adyen.WithBasicAuth(bad))
		require.Error(t, err, bad)
	}
	for _, bad := range [][]string{nil, {""}, {"zz"}, {exampleKey, "0x12"}} {
		_, err := adyen.New(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestParseFixtures(t *testing.T) {
	type want struct{ key, typ string }
	tests := []struct {
		file string
		want []want
	}{
		{"authorisation_success.json", []want{{"WebhookdShopECOM:WHKD4C7A1B2E9F30:AUTHORISATION:true", "AUTHORISATION"}}},
		{"authorisation_refused.json", []want{{"WebhookdShopECOM:WHKD8E2F6A0C3D51:AUTHORISATION:false", "AUTHORISATION"}}},
		{"capture.json", []want{{"WebhookdShopECOM:WHKD1B9C5E7F2A64:CAPTURE:true", "CAPTURE"}}},
		{"refund.json", []want{{"WebhookdShopECOM:WHKD6D3A8B1E4F75:REFUND:true", "REFUND"}}},
		{"batch_of_three.json", []want{
			{"WebhookdShopECOM:WHKD2F7B4C9A1E86:AUTHORISATION:true", "AUTHORISATION"},
			{"WebhookdShopECOM:WHKD9A5E2D6B3C07:CAPTURE:true", "CAPTURE"},
			{"WebhookdShopECOM:WHKD5C1F8E3A7B98:AUTHORISATION:false", "AUTHORISATION"},
		}},
	}
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	require.NoError(t, err)
	require.Len(t, paths, len(tests), "every fixture has a row here")
	a := newAdapter(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body := readFixture(t, tt.file)
			require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}), "fixtures are signed with exampleKey")
			items, err := a.Parse(providers.Delivery{Body: body})
			require.NoError(t, err)
			require.Len(t, items, len(tt.want))
			for i, it := range items {
				require.Equal(t, tt.want[i].key, it.Event.Key)
				require.Equal(t, tt.want[i].typ, it.Event.Type)
				require.Regexp(t, `^[0-9a-f]{64}$`, it.Event.Fingerprint)
				// The forwarded body is a one-item notification holding
				// the item's bytes as sent; it verifies on its own.
				var n struct {
					Live  json.RawMessage   `json:"live"`
					Items []json.RawMessage `json:"notificationItems"`
				}
				require.NoError(t, json.Unmarshal(it.Body, &n))
				require.Equal(t, `"false"`, string(n.Live))
				require.Len(t, n.Items, 1)
				require.True(t, bytes.Contains(body, n.Items[0]), "the item's bytes are unchanged")
				require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: it.Body}))
				one, err := a.Parse(providers.Delivery{Body: it.Body})
				require.NoError(t, err)
				require.Equal(t, []providers.Item{{Event: it.Event, Body: it.Body}}, one)
			}
		})
	}
}

func TestParseKeys(t *testing.T) {
	a := newAdapter(t, vecKey)
	long := strings.Repeat("A", adyen.MaxFieldBytes)
	tests := []struct {
		name    string
		item    string
		wantKey string
		wantErr error
	}{
		{"vector", vecItem(vecSignature), "merchantAccount:pspReference:EVENT:true", nil},
		{"longest parts", strings.NewReplacer(`"merchantAccount"`, `"`+long+`"`, `"pspReference":"pspReference"`, `"pspReference":"`+long+`"`, `"EVENT"`, `"`+long+`"`).Replace(vecItem("")),
			long + ":" + long + ":" + long + ":true", nil},
		{"no pspReference", strings.Replace(vecItem(""), `"pspReference":"pspReference",`, ``, 1), "", adyen.ErrNoEventKey},
		{"pspReference with a colon", strings.Replace(vecItem(""), `"pspReference":"pspReference"`, `"pspReference":"a:b"`, 1), "", adyen.ErrNoEventKey},
		{"merchant too long", strings.Replace(vecItem(""), `"merchantAccount"`, `"`+long+`A"`, 1), "", adyen.ErrNoEventKey},
		{"success neither", strings.Replace(vecItem(""), `"success":"true"`, `"success":"TRUE"`, 1), "", adyen.ErrNoEventKey},
		{"no eventCode", strings.Replace(vecItem(""), `"eventCode":"EVENT",`, ``, 1), "", adyen.ErrInvalidEventType},
		{"eventCode with CRLF", strings.Replace(vecItem(""), `"EVENT"`, `"E\r\nX: 1"`, 1), "", adyen.ErrInvalidEventType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := a.Parse(providers.Delivery{Body: notification(tt.item)})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, providers.ErrMalformed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantKey, items[0].Event.Key)
		})
	}
	_, err := a.Parse(providers.Delivery{Body: []byte(`{"live":"false","notificationItems":[]}`)})
	require.ErrorIs(t, err, adyen.ErrNotJSON)
}

func TestFingerprint(t *testing.T) {
	a := newAdapter(t, vecKey)
	first, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: notification(vecItem(vecSignature))}))
	require.NoError(t, err)
	tests := []struct {
		name     string
		item     string
		wantSame bool
	}{
		{"re-signed with another key", vecItem("AAAA" + vecSignature[4:]), true},
		{"eventDate and reason added", strings.Replace(vecItem(vecSignature), `"success"`, `"eventDate":"2026-01-01T00:00:00Z","reason":"r","success"`, 1), true},
		{"amount changed", strings.Replace(vecItem(vecSignature), `"value":1000`, `"value":1001`, 1), false},
		{"merchantReference changed", strings.Replace(vecItem(vecSignature), `"reference"`, `"other"`, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: notification(tt.item)}))
			require.NoError(t, err)
			require.Equal(t, first.Key, ev.Key)
			require.Equal(t, tt.wantSame, ev.Fingerprint == first.Fingerprint)
		})
	}
}

func TestSignAddsMissingSignature(t *testing.T) {
	a := newAdapter(t, vecKey)
	bare := vecItem("")
	for _, item := range []string{
		strings.Replace(bare, `"additionalData":{"hmacSignature":""},`, ``, 1),
		strings.Replace(bare, `"additionalData":{"hmacSignature":""},`, `"additionalData":null,`, 1),
		strings.Replace(bare, `"additionalData":{"hmacSignature":""}`, `"additionalData":{}`, 1),
		strings.Replace(bare, `"additionalData":{"hmacSignature":""}`, `"additionalData":{"authCode":"1"}`, 1),
	} {
		signed, err := a.Sign(notification(item, item))
		body := signed.Body
		require.NoError(t, err, item)
		require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}), string(body))
	}
}

func TestAcknowledgement(t *testing.T) {
	ack := newAdapter(t).Ack()
	require.Equal(t, 200, ack.Status)
	require.Equal(t, "[accepted]", string(ack.Body))
	require.True(t, strings.HasPrefix(ack.ContentType, "text/plain"))
}

// TestLive: live is not signed, and is copied into every item's forwarded
// body, so only the two values Adyen sends are accepted (a padded live
// would be copied MaxItems times).
func TestLive(t *testing.T) {
	a := newAdapter(t, vecKey)
	items := `,"notificationItems":[` + vecItem(vecSignature) + `]}`
	tests := []struct {
		live    string
		wantErr error
	}{
		{`"false"`, nil},
		{`"true"`, nil},
		{` "true" `, nil},
		{`false`, adyen.ErrLive},
		{`true`, adyen.ErrLive},
		{`null`, adyen.ErrLive},
		{`0`, adyen.ErrLive},
		{`""`, adyen.ErrLive},
		{`"TRUE"`, adyen.ErrLive},
		{`"tru\u0065"`, adyen.ErrLive},
		{`"false "`, adyen.ErrLive},
		{`{"pad":"x"}`, adyen.ErrLive},
		{`"` + strings.Repeat("x", 1000) + `"`, adyen.ErrLive},
	}
	for _, tt := range tests {
		t.Run(tt.live[:min(len(tt.live), 12)], func(t *testing.T) {
			body := []byte(`{"live":` + tt.live + items)
			err := a.Verify(context.Background(), providers.Delivery{Body: body})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			_, err = a.Parse(providers.Delivery{Body: body})
			require.ErrorIs(t, err, providers.ErrMalformed)
		})
	}
}

// TestItemWrapper: an element of notificationItems holds the
// NotificationRequestItem and nothing else, as Adyen sends it: an unsigned
// sibling would be forwarded with the item.
func TestItemWrapper(t *testing.T) {
	a := newAdapter(t, vecKey)
	good := vecItem(vecSignature)
	for _, item := range []string{
		strings.Replace(good, `{"NotificationRequestItem":`, `{"extra":"x","NotificationRequestItem":`, 1),
		strings.TrimSuffix(good, `}`) + `,"extra":{}}`,
		strings.TrimSuffix(good, `}`) + `,"notificationrequestitem2":null}`,
	} {
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Body: notification(item)}), adyen.ErrUnreadableBody, item)
		_, err := a.Parse(providers.Delivery{Body: notification(item)})
		require.ErrorIs(t, err, adyen.ErrNotJSON)
	}
}

// TestForwardedBytes bounds what Parse builds for the core service: the
// items' bytes plus a fixed wrapper each, whatever the request. The attack
// it guards against is one genuine item repeated MaxItems times behind a
// padded live, ~850 KB: before live was checked, Parse built MaxItems
// copies of the padding (~85 MB from a 1 MiB request).
func TestForwardedBytes(t *testing.T) {
	a := newAdapter(t, vecKey)
	items := make([]string, adyen.MaxItems)
	for i := range items {
		items[i] = vecItem(vecSignature)
	}
	list := `,"notificationItems":[` + strings.Join(items, ",") + `]}`
	padded := []byte(`{"live":"` + strings.Repeat("x", 850<<10) + `"` + list)
	err := a.Verify(context.Background(), providers.Delivery{Body: padded})
	if err == nil {
		split, err := a.Parse(providers.Delivery{Body: padded})
		require.NoError(t, err)
		t.Errorf("padded live accepted: %d items, %d forwarded bytes from a %d-byte request",
			len(split), forwardedBytes(split), len(padded))
	}
	require.ErrorIs(t, err, adyen.ErrLive)

	// The largest batch that verifies: MaxItems items, each padded in an
	// unsigned member up to a 1 MiB body.
	pad := strings.Repeat("y", (1<<20)/adyen.MaxItems-len(items[0])-40)
	for i := range items {
		items[i] = strings.Replace(vecItem(vecSignature), `"success"`, `"reason":"`+pad+`","success"`, 1)
	}
	body := notification(items...)
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Body: body}))
	split, err := a.Parse(providers.Delivery{Body: body})
	require.NoError(t, err)
	got := forwardedBytes(split)
	t.Logf("%d items: %d forwarded bytes from a %d-byte request (%.3fx)", len(split), got, len(body), float64(got)/float64(len(body)))
	require.LessOrEqual(t, got, len(body)+adyen.MaxItems*len(`{"live":"false","notificationItems":[]}`))
}

func forwardedBytes(items []providers.Item) int {
	n := 0
	for _, it := range items {
		n += len(it.Body)
	}
	return n
}

// TestShiftedKeys: merchantAccountCode:pspReference:eventCode:success with
// a ":" moved from one part to the next never gives two items one key (no
// part may hold ":").
func TestShiftedKeys(t *testing.T) {
	item := func(merchant, psp, code string) []byte {
		return notification(`{"NotificationRequestItem":{"additionalData":{"hmacSignature":"x"},"amount":{"currency":"EUR","value":1000},` +
			`"eventCode":"` + code + `","merchantAccountCode":"` + merchant + `","merchantReference":"r","pspReference":"` + psp + `","success":"true"}}`)
	}
	a := newAdapter(t)
	for _, tt := range []struct {
		name string
		a, b []byte
	}{
		{"merchant into pspReference", item("Shop:ECOM", "8816", "AUTHORISATION"), item("Shop", "ECOM:8816", "AUTHORISATION")},
		{"pspReference into eventCode", item("Shop", "8816:AUTHORISATION", "X"), item("Shop", "8816", "AUTHORISATION:X")},
	} {
		t.Run(tt.name, func(t *testing.T) { providertest.ShiftedApart(t, a, tt.a, tt.b) })
	}
}
