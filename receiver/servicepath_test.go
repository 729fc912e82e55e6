package receiver_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// Winpay's published SNAP callback (docs/providers/winpay.md): its sandbox
// public key, headers and body exactly as signed.
const (
	winpayKey = `-----BEGIN PUBLIC KEY-----
MIGeMA0GCSqGSIb3DQEBAQUAA4GMADCBiAKBgHGK10J1oBbCD75Wy8P5rL8zzCz9
lpHZ7OIHVaO4vlX0tjpKD887ldaTLl4Vdhc6I88OHscV/ijQ7OQ07IpWLAoSm7VK
puiUDt9xUx9dCHAIrH6DDNOI95z2b6jxwh81ZTC+LCDsEb5b797dmxa7Kv8kABjo
Nt8JR33E9p3d7uzrAgMBAAE=
-----END PUBLIC KEY-----
`
	winpayBody      = `{"partnerServiceId":"    9042","customerNo":"00000009","virtualAccountNo":"    904200000009","virtualAccountName":"WINPAY - fiandi","trxId":"INV-000000023220","paymentRequestId":"45539","paidAmount":{"value":"10000.00","currency":"IDR"},"trxDateTime":"2024-01-11T08:57:55+07:00","additionalInfo":{"contractId":"si1cd5671d-2ffe-4cca-aff0-b8ee9bc1c041","channel":"BSI"}}`
	winpaySignature = "Zng8tJgtK2lPd8CP89KyO1OGEKXn1tFfXevTGIn5IhHYDpobp7+4uvuczP5HwldghO5mzkh03v6wnggoZev8M2RyKegbrRaIr66KbAgr6sfKfH9MfkXFcEKpF/am8QMr4oExKPdYTdGEr6pq6m1CzUjFQsyu9z6JuMGrjXrxFXU="
)

// TestServicePathRoute: a SNAP sender's service path after the route
// reaches its provider and is signed after the notification path; the
// answer is the SNAP acknowledgement, replayed on a retry without a second
// forward. A route without the service path the delivery was signed for
// is 401; a service path on a provider that takes none, or that is not a
// path of segments, is 404 as an unknown route is.
func TestServicePathRoute(t *testing.T) {
	winpay := buildGateway(t, builtinSpec(t, "winpay"),
		map[string]string{"NOTIFICATION_PATH": "/sandbox_prod/url_listener.php", "ALLOW_WEAK_KEYS": "true"}, winpayKey)
	h := newHarness(t, func(h *harness) { h.extra = []providers.Provider{winpay} })
	d := providers.Delivery{Header: http.Header{}, Body: []byte(winpayBody)}
	d.Header.Set("Content-Type", "application/json")
	d.Header.Set("X-Timestamp", "2024-01-11T08:57:55+07:00")
	d.Header.Set("X-Partner-Id", "170041")
	d.Header.Set("X-Signature", winpaySignature)

	const ack = `{"responseCode":"2002500","responseMessage":"Successful"}`
	h.down.setHandler(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	down := h.sendDelivery("winpay/v1.0/transfer-va/payment", d)
	require.Equal(t, http.StatusServiceUnavailable, down.status, "the core unavailable: the sender retries")
	require.NotEmpty(t, down.header.Get("Retry-After"))
	h.down.setHandler(nil)
	before := h.down.calls.Load()
	first := h.sendDelivery("winpay/v1.0/transfer-va/payment", d)
	require.Equal(t, http.StatusOK, first.status, first.body)
	require.Equal(t, ack, first.body)
	require.Equal(t, "application/json", first.header.Get("Content-Type"))
	again := h.sendDelivery("winpay/v1.0/transfer-va/payment", d)
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, ack, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, before+1, h.down.calls.Load(), "forwarded once")
	require.Equal(t, "winpay:45539:INV-000000023220", h.records()[0].Key)

	require.Equal(t, http.StatusUnauthorized, h.sendDelivery("winpay", d).status, "signed with the service path")
	require.Equal(t, http.StatusUnauthorized, h.sendDelivery("winpay/v1.0/debit/notify", d).status)
	for _, path := range []string{"stripe/v1.0/transfer-va/payment", "winpay/", "winpay/v1.0//payment", "winpay/v1.0/transfer%20va", "absent/v1.0", "winpay/v1.0/./payment", "winpay/v1.0/../payment"} {
		require.Equal(t, http.StatusNotFound, h.sendDelivery(path, d).status, path)
	}
}
