package receiver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
)

// duitkuStatus is an answer of Duitku's transaction status API for the
// failed card callback of fixtures/duitku/credit_card_failed.json.
func duitkuStatus(reference, code string) string {
	return fmt.Sprintf(`{"merchantOrderId":"INV-2024-000732","reference":%q,"amount":"275000","fee":"0.00","statusCode":%q,"statusMessage":"x"}`, reference, code)
}

// TestDuitkuVerifyStatus is the reviewer's attack end to end: a genuine
// failed callback re-sent with resultCode=00 and reference=ATTACK keeps a
// valid signature (Duitku signs neither field), so only the status check
// refuses it.
func TestDuitkuVerifyStatus(t *testing.T) {
	api := newStatusStub(t)
	dk, err := duitku.New(duitkuMerchant, []string{duitkuKey}, duitku.WithStatusCheck(api.URL), duitku.WithStatusTimeout(2*time.Second))
	require.NoError(t, err)
	h := newHarness(t, withProviders(dk))
	signed, err := dk.Sign(fixture(t, "duitku", "credit_card_failed.json"))
	failed, header := signed.Body, signed.Header
	require.NoError(t, err)
	forged := strings.Replace(string(failed), "resultCode=01", "resultCode=00", 1)
	forged = strings.Replace(forged, "reference=DS1578224L3RB7YD2C6XGF", "reference=ATTACK", 1)
	require.NoError(t, newDuitku(t, duitkuKey).Verify(context.Background(), providers.Delivery{Header: nil, Body: []byte(forged)}), "the forgery verifies")

	t.Run("the forged success is 401, not forwarded, key released", func(t *testing.T) {
		api.set(http.StatusOK, duitkuStatus("DS1578224L3RB7YD2C6XGF", "02"))
		r := h.sendAs(duitku.Name, []byte(forged), header)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Zero(t, h.down.calls.Load())
		require.Empty(t, h.records(), "the key is released")
	})

	t.Run("API down is 503 with Retry-After, key released, the retry is forwarded", func(t *testing.T) {
		api.set(http.StatusInternalServerError, ``)
		r := h.sendAs(duitku.Name, failed, header)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.NotEmpty(t, r.header.Get("Retry-After"))
		require.Zero(t, h.down.calls.Load())
		require.Empty(t, h.records())

		api.set(http.StatusOK, duitkuStatus("DS1578224L3RB7YD2C6XGF", "02"))
		r = h.sendAs(duitku.Name, failed, header)
		require.Equal(t, http.StatusCreated, r.status)
		require.EqualValues(t, 1, h.down.calls.Load())
		require.Equal(t, dedupe.Completed, h.state("duitku:INV-2024-000732:DS1578224L3RB7YD2C6XGF:01"))
	})

	t.Run("API unreachable is 503", func(t *testing.T) {
		api.Close()
		r := h.sendAs(duitku.Name, []byte(forged), header)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.NotContains(t, r.body, api.URL)
		require.EqualValues(t, 1, h.down.calls.Load())
	})
}
