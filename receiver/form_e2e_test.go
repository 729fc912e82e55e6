package receiver_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers/duitku"
)

// End-to-end tests of a form body whose signature is one of its fields
// (Duitku's callbacks), on the harness of receiver_test.go.

const (
	duitkuMerchant = "DS15782" // the merchantCode of fixtures/duitku
	duitkuKey      = "duitku_e2e_api_key_new"
	duitkuKeyOld   = "duitku_e2e_api_key_old"
	paypalWebhook  = "5GP028458E2496506"
)

func newDuitku(t *testing.T, keys ...string) *duitku.Adapter {
	a, err := duitku.New(duitkuMerchant, keys)
	require.NoError(t, err)
	return a
}

// sendAs posts body to /webhooks/provider with header, whose Content-Type
// stands (send sets JSON's).
func (h *harness) sendAs(provider string, body []byte, header http.Header) reply {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/webhooks/"+provider, bytes.NewReader(body))
	require.NoError(h.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func TestDuitkuEndToEnd(t *testing.T) {
	receiving := newDuitku(t, duitkuKey, duitkuKeyOld)
	h := newHarness(t, withProviders(receiving))
	sender := newDuitku(t, duitkuKey)

	t.Run("form forwarded byte for byte with its Content-Type, retries replayed", func(t *testing.T) {
		signed, err := sender.Sign(fixture(t, "duitku", "ovo_success.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		for i := range 3 {
			r := h.sendAs(duitku.Name, body, header)
			require.Equal(t, http.StatusCreated, r.status, r.body)
			require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true", "attempt %d", i)
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0], "the raw form, byte for byte")
		require.Equal(t, "application/x-www-form-urlencoded", got.Header.Get("Content-Type"))
		require.Equal(t, "duitku:INV-2024-000733:DS1578224M9TC4NH8E1WJK:00", got.Header.Get("Idempotency-Key"))
		require.Equal(t, "00", got.Header.Get("Webhook-Event-Type"))
		require.Equal(t, dedupe.Completed, h.state("duitku:INV-2024-000733:DS1578224M9TC4NH8E1WJK:00"))
	})

	t.Run("the same callback with its fields in another order is a replay", func(t *testing.T) {
		signed, err := sender.Sign(fixture(t, "duitku", "ovo_success.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		pairs := strings.Split(string(body), "&")
		pairs[0], pairs[len(pairs)-1] = pairs[len(pairs)-1], pairs[0]
		r := h.sendAs(duitku.Name, []byte(strings.Join(pairs, "&")), header)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		require.EqualValues(t, 1, h.down.calls.Load())
	})

	t.Run("a field given twice is 400, nothing stored or forwarded", func(t *testing.T) {
		before := h.down.calls.Load()
		signed, err := sender.Sign(fixture(t, "duitku", "qris_success.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		for _, extra := range []string{"&amount=1", "&merchantOrderId=INV-2024-000999", "&resultCode=00"} {
			r := h.sendAs(duitku.Name, append(bytes.Clone(body), extra...), header)
			require.Equal(t, http.StatusBadRequest, r.status, extra)
			require.Contains(t, r.body, "given twice")
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Zero(t, h.state("duitku:INV-2024-000734:DS1578224N4VF6PK3A9ZQM:00"))
	})

	t.Run("forged, foreign or not a form is refused", func(t *testing.T) {
		before := h.down.calls.Load()
		body := fixture(t, "duitku", "va_bca_success.json")
		signed, err := newDuitku(t, "someone_elses_key").Sign(body)
		forged, header := signed.Body, signed.Header
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, h.sendAs(duitku.Name, forged, header).status)
		other, err := duitku.New("DS99999", []string{duitkuKey})
		require.NoError(t, err)
		signed, err = other.Sign([]byte(strings.Replace(string(body), "merchantCode=DS15782", "merchantCode=DS99999", 1)))
		foreign, header := signed.Body, signed.Header
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, h.sendAs(duitku.Name, foreign, header).status, "signed with our key for another merchant code")
		require.Equal(t, http.StatusBadRequest, h.sendAs(duitku.Name, []byte("%zz"), header).status)
		require.Equal(t, before, h.down.calls.Load())
	})

	t.Run("a callback signed with the old key is accepted", func(t *testing.T) {
		signed, err := newDuitku(t, duitkuKeyOld).Sign(fixture(t, "duitku", "credit_card_failed.json"))
		body, header := signed.Body, signed.Header
		require.NoError(t, err)
		r := h.sendAs(duitku.Name, body, header)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		require.Equal(t, "01", h.down.got[len(h.down.got)-1].Header.Get("Webhook-Event-Type"))
	})
}
