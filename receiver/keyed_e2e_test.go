package receiver_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/signature"
)

// End-to-end tests of event keys that are not a body's id member: Standard
// Webhooks' webhook-id header (and Svix's names for it) and Razorpay's id
// of the entity named first in contains, on the harness of receiver_test.go.

// The Standard Webhooks headers (webhook-*, and Svix's names for them) and
// the default of WEBHOOKD_STANDARD_TOLERANCE.
const (
	stdHeaderID            = "Webhook-Id"
	stdHeaderTimestamp     = "Webhook-Timestamp"
	stdHeaderSignature     = "Webhook-Signature"
	stdHeaderSvixID        = "Svix-Id"
	stdHeaderSvixTimestamp = "Svix-Timestamp"
	stdHeaderSvixSignature = "Svix-Signature"
	stdTolerance           = 5 * time.Minute
)

var (
	stdSecret    = "whsec_" + base64.StdEncoding.EncodeToString([]byte("e2e-standard-webhooks-key-0001"))
	stdSecretOld = "whsec_" + base64.StdEncoding.EncodeToString([]byte("e2e-standard-webhooks-key-0000"))
)

const (
	rzpSecret    = "rzp_e2e_webhook_secret_new"
	rzpSecretOld = "rzp_e2e_webhook_secret_old"
	// rzpHeader carries Razorpay's signature; rzpEventID its event id,
	// which is not signed, so no key reads it.
	rzpHeader  = "X-Razorpay-Signature"
	rzpEventID = "X-Razorpay-Event-Id"
)

// rzpSignature is the X-Razorpay-Signature Razorpay sends for body signed
// with secret.
func rzpSignature(secret string, body []byte) string {
	return signature.HMACSHA256Hex([]byte(secret), body)
}

// newStandard returns an adapter holding secrets whose clock is now+skew:
// the receiver's with skew 0, a sender's with its own clock.
func newStandard(t *testing.T, skew time.Duration, secrets ...string) *spec.Provider {
	p, err := builtinSpec(t, "standard").New(secrets, nil, func() time.Time { return time.Now().Add(skew) })
	require.NoError(t, err)
	return p
}

// signMessage returns the headers sender sends with body as message id:
// a retry of a message is signMessage with its id again.
func signMessage(sender *spec.Provider, id string, body []byte) (http.Header, error) {
	d, err := sender.Resign(providers.Delivery{Header: http.Header{stdHeaderID: {id}}}, body)
	return d.Header, err
}

func newRazorpay(t *testing.T, secrets ...string) *spec.Provider {
	p, err := builtinSpec(t, "razorpay").New(secrets, nil, nil)
	require.NoError(t, err)
	return p
}

// message sends body as Standard Webhooks message id, signed by sender.
func (h *harness) message(sender *spec.Provider, id string, body []byte) reply {
	h.t.Helper()
	header, err := signMessage(sender, id, body)
	require.NoError(h.t, err)
	return h.send("standard", body, header)
}

func TestStandardEndToEnd(t *testing.T) {
	receiving := newStandard(t, 0, stdSecret, stdSecretOld)
	sender := newStandard(t, 0, stdSecret)
	h := newHarness(t, withProviders(receiving))
	body := fixture(t, "standard", "invoice_paid.json")
	const id = "msg_2dXq8Lw3Vn5Rk7Tb1Jc9Hs4Pm6Y"

	t.Run("forwarded once with the contract's headers, retries replayed", func(t *testing.T) {
		for i := range 3 {
			r := h.message(sender, id, body)
			require.Equal(t, http.StatusCreated, r.status)
			require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true", "attempt %d", i)
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0], "the raw body, byte for byte")
		require.Equal(t, "standard:"+id, got.Header.Get("Idempotency-Key"))
		require.Equal(t, "standard", got.Header.Get("Webhook-Provider"))
		require.Equal(t, id, got.Header.Get("Webhook-Event-Id"))
		require.Equal(t, "invoice.paid", got.Header.Get("Webhook-Event-Type"))
		require.Empty(t, got.Header.Get(stdHeaderSignature), "the sender's signature is not forwarded")
		require.Equal(t, dedupe.Completed, h.state("standard:"+id))
	})

	t.Run("the same message with Svix's header names is the same event", func(t *testing.T) {
		header, err := signMessage(sender, id, body)
		require.NoError(t, err)
		svix := http.Header{}
		svix.Set(stdHeaderSvixID, header.Get(stdHeaderID))
		svix.Set(stdHeaderSvixTimestamp, header.Get(stdHeaderTimestamp))
		svix.Set(stdHeaderSvixSignature, header.Get(stdHeaderSignature))
		r := h.send("standard", body, svix)
		require.Equal(t, http.StatusCreated, r.status)
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		require.EqualValues(t, 1, h.down.calls.Load())
	})

	t.Run("a captured body under another id is 401: the id is signed", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		header, err := signMessage(sender, id, body)
		require.NoError(t, err)
		header.Set(stdHeaderID, "msg_2dXq8Lw3Vn5Rk7Tb1Jc9Hs4Pm6Z")
		require.Equal(t, http.StatusUnauthorized, h.send("standard", body, header).status)
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
	})

	t.Run("another body under a used id is 422", func(t *testing.T) {
		other := bytes.Replace(body, []byte(`249000`), []byte(`24900`), 1)
		require.Equal(t, http.StatusUnprocessableEntity, h.message(sender, id, other).status)
		require.EqualValues(t, 1, h.down.calls.Load())
	})

	t.Run("forged or unsigned messages are 401, store untouched", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		good, err := signMessage(sender, "msg_forged_1", body)
		require.NoError(t, err)
		strange := newStandard(t, 0, "whsec_"+base64.StdEncoding.EncodeToString([]byte("not-a-configured-key")))
		wrong, err := signMessage(strange, "msg_forged_1", body)
		require.NoError(t, err)
		tampered := bytes.Replace(body, []byte(`"paid"`), []byte(`"void"`), 1)
		for name, tt := range map[string]struct {
			header http.Header
			body   []byte
		}{
			"wrong secret":         {wrong, body},
			"body changed":         {good, tampered},
			"no headers":           {nil, body},
			"signature removed":    {http.Header{stdHeaderID: good[stdHeaderID], stdHeaderTimestamp: good[stdHeaderTimestamp]}, body},
			"timestamp moved":      {http.Header{stdHeaderID: good[stdHeaderID], stdHeaderTimestamp: {"1"}, stdHeaderSignature: good[stdHeaderSignature]}, body},
			"webhook- and svix-id": {func() http.Header { x := good.Clone(); x.Set(stdHeaderSvixID, "msg_other"); return x }(), body},
		} {
			r := h.send("standard", tt.body, tt.header)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
			require.NotContains(t, r.body, stdSecret[6:], name)
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
	})

	t.Run("rotation: the old and the new secret both verify", func(t *testing.T) {
		before := h.down.calls.Load()
		old := newStandard(t, 0, stdSecretOld)
		require.Equal(t, http.StatusCreated, h.message(old, "msg_rotation_old", body).status)
		require.Equal(t, http.StatusCreated, h.message(sender, "msg_rotation_new", body).status)
		require.EqualValues(t, before+2, h.down.calls.Load())
	})

	t.Run("tolerance both ways", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		over := stdTolerance + 30*time.Second
		for name, skew := range map[string]time.Duration{"too old": -over, "too new": over} {
			r := h.message(newStandard(t, skew, stdSecret), "msg_skewed_"+name[4:], body)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
		inside := stdTolerance - 30*time.Second
		for name, skew := range map[string]time.Duration{"old": -inside, "new": inside} {
			r := h.message(newStandard(t, skew, stdSecret), "msg_inside_"+name, body)
			require.Equal(t, http.StatusCreated, r.status, name)
		}
		require.EqualValues(t, before+2, h.down.calls.Load())
	})

	t.Run("any body: not JSON is forwarded with no type", func(t *testing.T) {
		before := h.down.calls.Load()
		r := h.message(sender, "msg_plain_text", []byte("plain text, not JSON"))
		require.Equal(t, http.StatusCreated, r.status)
		require.EqualValues(t, before+1, h.down.calls.Load())
		keys, types := h.forwarded()
		require.Equal(t, "standard:msg_plain_text", keys[len(keys)-1])
		require.Empty(t, types[len(types)-1])
	})
}

func TestRazorpayEndToEnd(t *testing.T) {
	receiving := newRazorpay(t, rzpSecret, rzpSecretOld)
	sender := newRazorpay(t, rzpSecret)
	h := newHarness(t, withProviders(receiving))
	body := fixture(t, "razorpay", "payment_captured.json")
	const key = "razorpay:payment.captured:pay_WhkP4c8nSLa2Qe:1773480125"
	send := func(s *spec.Provider, body []byte, eventID string) reply {
		t.Helper()
		signed, err := s.Sign(body)
		out, header := signed.Body, signed.Header
		require.NoError(t, err)
		header.Set(rzpEventID, eventID)
		return h.send("razorpay", out, header)
	}

	t.Run("forwarded once with the contract's headers, retries replayed", func(t *testing.T) {
		for i := range 3 {
			r := send(sender, body, "RzpEvt0001")
			require.Equal(t, http.StatusCreated, r.status)
			require.Equal(t, i > 0, r.header.Get("Idempotent-Replayed") == "true", "attempt %d", i)
		}
		require.EqualValues(t, 1, h.down.calls.Load())
		got := h.down.got[0]
		require.Equal(t, body, h.down.bodies[0], "the raw body, byte for byte")
		require.Equal(t, key, got.Header.Get("Idempotency-Key"))
		require.Equal(t, "razorpay", got.Header.Get("Webhook-Provider"))
		require.Equal(t, key[len("razorpay:"):], got.Header.Get("Webhook-Event-Id"))
		require.Equal(t, "payment.captured", got.Header.Get("Webhook-Event-Type"))
		require.Empty(t, got.Header.Get(rzpHeader), "the signature is not forwarded")
		require.Equal(t, dedupe.Completed, h.state(key))
	})

	t.Run("a captured body with a new x-razorpay-event-id is replayed, not forwarded", func(t *testing.T) {
		for _, id := range []string{"RzpEvtForged1", "RzpEvtForged2", ""} {
			r := send(sender, body, id)
			require.Equal(t, http.StatusCreated, r.status, id)
			require.Equal(t, "true", r.header.Get("Idempotent-Replayed"), id)
		}
		require.EqualValues(t, 1, h.down.calls.Load())
	})

	t.Run("each event of a payment is forwarded once", func(t *testing.T) {
		before := h.down.calls.Load()
		names := []string{"payment_authorized.json", "order_paid.json", "payment_failed.json", "refund_processed.json"}
		for _, name := range names {
			require.Equal(t, http.StatusCreated, send(sender, fixture(t, "razorpay", name), "").status, name)
			require.Equal(t, "true", send(sender, fixture(t, "razorpay", name), "").header.Get("Idempotent-Replayed"), name)
		}
		keys, types := h.forwarded()
		require.Equal(t, []string{
			"razorpay:payment.authorized:pay_WhkP4c8nSLa2Qe:1773480063",
			"razorpay:order.paid:pay_WhkP4c8nSLa2Qe:1773480126",
			"razorpay:payment.failed:pay_WhkF9mB3wXs7Kd:1773481466",
			"razorpay:refund.processed:rfnd_WhkR6tN1qVz5Ja:1773566502",
		}, keys[before:])
		require.Equal(t, []string{"payment.authorized", "order.paid", "payment.failed", "refund.processed"}, types[before:])
	})

	t.Run("forged or unsigned webhooks are 401, store untouched", func(t *testing.T) {
		before, recs := h.down.calls.Load(), len(h.records())
		good := rzpSignature(rzpSecret, body)
		for name, tt := range map[string]struct {
			header http.Header
			body   []byte
		}{
			"wrong secret":   {http.Header{rzpHeader: {rzpSignature("rzp_not_configured", body)}}, body},
			"amount changed": {http.Header{rzpHeader: {good}}, bytes.Replace(body, []byte(`249000`), []byte(`24900`), 1)},
			"no signature":   {http.Header{rzpEventID: {"RzpEvt0001"}}, body},
			"sent twice":     {http.Header{rzpHeader: {good, good}}, body},
		} {
			r := h.send("razorpay", tt.body, tt.header)
			require.Equal(t, http.StatusUnauthorized, r.status, name)
			require.NotContains(t, r.body, rzpSecret, name)
		}
		require.Equal(t, before, h.down.calls.Load())
		require.Len(t, h.records(), recs)
	})

	t.Run("rotation: an event from before it, retried with the old secret, verifies", func(t *testing.T) {
		before := h.down.calls.Load()
		old := newRazorpay(t, rzpSecretOld)
		// Another event of the same payment, created before the rotation.
		retry := bytes.Replace(body, []byte(`"created_at":1773480125`), []byte(`"created_at":1773480099`), 1)
		require.Equal(t, http.StatusCreated, send(old, retry, "RzpEvtOld").status)
		require.Equal(t, "true", send(sender, retry, "RzpEvtOld").header.Get("Idempotent-Replayed"),
			"a dashboard replay, signed with the current secret, is the same event")
		require.EqualValues(t, before+1, h.down.calls.Load())
	})
}
