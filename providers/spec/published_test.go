package spec_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

// Stripe's signing vectors (docs/providers/stripe.md): stripe-go's test
// secret (https://github.com/stripe/stripe-go/blob/master/webhook/client_test.go)
// and a body, with signatures recomputed by stripe-go v86.2.0's
// ComputeSignature, Python's hmac and openssl; vecStripeV0 is the fake
// test-mode signature of Stripe's docs example
// (https://docs.stripe.com/webhooks#verify-manually).
const (
	vecStripeSecret       = "whsec_test_secret"
	vecStripeSecretRolled = "whsec_test_secret_rolled_key"
	vecStripeT            = 1700000000
	vecStripeBody         = `{"id":"evt_test_webhook","object":"event"}`
	vecStripeV1           = "d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990"
	vecStripeV1Rolled     = "7548122dce5e2b728b67327c07959ace6ce459f5ca13822932dac476fc4e0005"
	vecStripeV0           = "6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39"

	vecStripeHeader   = "t=1700000000,v1=" + vecStripeV1
	vecStripeRotation = "t=1700000000,v1=" + vecStripeV1 + ",v1=" + vecStripeV1Rolled + ",v0=" + vecStripeV0
)

// Paddle's signing vectors (docs/providers/paddle.md), each from the test
// suite of one of Paddle's SDKs, recomputed with Python's hmac.
const (
	// https://github.com/PaddleHQ/paddle-go-sdk/blob/main/webhook_verifier_test.go
	vecPaddleGoSecret = "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr"
	vecPaddleGoTS     = 1710929255
	vecPaddleGoH1     = "6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8"
	vecPaddleGoHeader = "ts=1710929255;h1=" + vecPaddleGoH1
	vecPaddleGoBody   = `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`

	// https://github.com/PaddleHQ/paddle-node-sdk (src/notifications/helpers/webhooks-validator.node.test.ts):
	// the spaces in the body are signed, so the same body with more
	// spaces must fail.
	vecPaddleNodeSecret      = "VALID_SECRET"
	vecPaddleNodeTS          = 1698796800
	vecPaddleNodeHeader      = "ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"
	vecPaddleNodeBody        = `{"data": ["1", "2"]}`
	vecPaddleNodeMultiBody   = `{"data": "value"}`
	vecPaddleNodeMultiH1     = "28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261"
	vecPaddleNodeMultiHeader = "ts=1698796800;h1=" + vecPaddleNodeMultiH1 + ";h1=" + vecPaddleNodeMultiH1 + ";h2=RANDOM_HASH"

	// https://github.com/PaddleHQ/paddle-python-sdk (tests/Unit/Notification/test_Verifier.py):
	// the rotation header, with a non-hex h1 before the real one, checked
	// against three secrets of which only the last signed it.
	vecPaddlePyTS         = 1696195954
	vecPaddlePyHeader     = "ts=1696195954;h1=dummy;h1=d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02"
	vecPaddlePyBody       = "hello-world"
	vecPaddlePySecretBad1 = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_TjIG2BXbm83HPXqNfziwe506sBEdqL/4"
	vecPaddlePySecretBad2 = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_vB/yIOnTOCWIvpBadM5jzBZPHc7OmdSo"
	vecPaddlePySecretGood = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh"
)

// published is one delivery of a gateway's published vectors, or one
// derived from them, and the verdict the built-in spec gives it: nil, or
// the sentinel its error wraps.
type published struct {
	name    string
	secrets []string
	now     time.Time
	header  []string // the signature header's values
	body    string
	want    error
}

// TestPublishedVectors verifies Stripe's and Paddle's published vectors,
// and the tampered, stale and rotated deliveries made from them, through
// the built-in specs webhookd serves: the checks the hand-written adapters
// were tested with, on the specs that replaced them.
func TestPublishedVectors(t *testing.T) {
	junk := strings.Repeat("ab", 32) // 64 hex digits that match nothing
	stripeNow := time.Unix(vecStripeT+60, 0)
	stripeOne := []string{vecStripeSecret}
	stripeCases := []published{
		{"vector", stripeOne, stripeNow, []string{vecStripeHeader}, vecStripeBody, nil},
		{"vector with the rolled secret", []string{vecStripeSecretRolled}, stripeNow, []string{"t=1700000000,v1=" + vecStripeV1Rolled}, vecStripeBody, nil},
		{"rotation header, old secret configured", stripeOne, stripeNow, []string{vecStripeRotation}, vecStripeBody, nil},
		{"rotation header, new secret configured", []string{vecStripeSecretRolled}, stripeNow, []string{vecStripeRotation}, vecStripeBody, nil},
		{"rotation header, both configured", []string{vecStripeSecretRolled, vecStripeSecret}, stripeNow, []string{vecStripeRotation}, vecStripeBody, nil},
		{"one v1 against the second of two secrets", []string{vecStripeSecretRolled, vecStripeSecret}, stripeNow, []string{vecStripeHeader}, vecStripeBody, nil},
		{"uppercase hex decodes like stripe-go", stripeOne, stripeNow, []string{"t=1700000000,v1=" + strings.ToUpper(vecStripeV1)}, vecStripeBody, nil},
		{"elements in any order", stripeOne, stripeNow, []string{"v0=" + vecStripeV0 + ",v1=" + vecStripeV1 + ",t=1700000000"}, vecStripeBody, nil},
		{"non-hex v1 skipped, next v1 matches", stripeOne, stripeNow, []string{"t=1700000000,v1=zz,v1=" + vecStripeV1}, vecStripeBody, nil},
		{"unknown scheme ignored", stripeOne, stripeNow, []string{"t=1700000000,v2=xyz,v1=" + vecStripeV1}, vecStripeBody, nil},
		{"same signature under v0 only", stripeOne, stripeNow, []string{"t=1700000000,v0=" + vecStripeV1}, vecStripeBody, spec.ErrNoValidSignature},
		{"body with an extra space", stripeOne, stripeNow, []string{vecStripeHeader}, `{"id":"evt_test_webhook", "object":"event"}`, spec.ErrNoValidSignature},
		{"one byte of the body changed", stripeOne, stripeNow, []string{vecStripeHeader}, `{"id":"evt_test_webhooK","object":"event"}`, spec.ErrNoValidSignature},
		{"body with a trailing newline", stripeOne, stripeNow, []string{vecStripeHeader}, vecStripeBody + "\n", spec.ErrNoValidSignature},
		{"empty body", stripeOne, stripeNow, []string{vecStripeHeader}, "", spec.ErrNoValidSignature},
		{"wrong secret", []string{"whsec_other"}, stripeNow, []string{vecStripeHeader}, vecStripeBody, spec.ErrNoValidSignature},
		{"secret without the whsec_ prefix", []string{"test_secret"}, stripeNow, []string{vecStripeHeader}, vecStripeBody, spec.ErrNoValidSignature},
		{"timestamp changed", stripeOne, stripeNow, []string{"t=1700000001,v1=" + vecStripeV1}, vecStripeBody, spec.ErrNoValidSignature},
		{"missing header", stripeOne, stripeNow, nil, vecStripeBody, spec.ErrNotSigned},
		{"empty header", stripeOne, stripeNow, []string{""}, vecStripeBody, spec.ErrNotSigned},
		{"header sent twice", stripeOne, stripeNow, []string{vecStripeHeader, vecStripeHeader}, vecStripeBody, spec.ErrInvalidHeader},
		{"header with only t", stripeOne, stripeNow, []string{"t=1700000000"}, vecStripeBody, spec.ErrNoValidSignature},
		{"space after comma", stripeOne, stripeNow, []string{"t=1700000000, v1=" + vecStripeV1}, vecStripeBody, nil},
		{"non-hex v1", stripeOne, stripeNow, []string{"t=1700000000,v1=" + strings.Repeat("g", 64)}, vecStripeBody, spec.ErrNoValidSignature},
		{"v1 one byte short", stripeOne, stripeNow, []string{"t=1700000000,v1=" + vecStripeV1[:62]}, vecStripeBody, spec.ErrNoValidSignature},
		{"v1 one byte long", stripeOne, stripeNow, []string{vecStripeHeader + "00"}, vecStripeBody, spec.ErrNoValidSignature},
		{"v1 empty", stripeOne, stripeNow, []string{"t=1700000000,v1="}, vecStripeBody, spec.ErrNoValidSignature},
		{"just inside the tolerance", stripeOne, time.Unix(vecStripeT, 0).Add(5 * time.Minute), []string{vecStripeHeader}, vecStripeBody, nil},
		{"older than the tolerance", stripeOne, time.Unix(vecStripeT, 0).Add(5*time.Minute + time.Second), []string{vecStripeHeader}, vecStripeBody, spec.ErrTooOld},
		{"old timestamp refused before the signature is checked", stripeOne, time.Unix(vecStripeT, 0).Add(time.Hour), []string{"t=1700000000,v1=" + junk}, vecStripeBody, spec.ErrTooOld},
		{"future timestamp accepted", stripeOne, time.Unix(vecStripeT, 0).Add(-time.Hour), []string{vecStripeHeader}, vecStripeBody, nil},
		{"oversized header", stripeOne, stripeNow, []string{vecStripeHeader + ",x=" + strings.Repeat("a", spec.MaxHeaderBytes)}, vecStripeBody, spec.ErrInvalidHeader},
		{"header of exactly the maximum size", stripeOne, stripeNow, []string{vecStripeHeader + ",x=" + strings.Repeat("a", spec.MaxHeaderBytes-len(vecStripeHeader)-3)}, vecStripeBody, nil},
		{"valid v1 within the first MaxSignatures", stripeOne, stripeNow, []string{"t=1700000000," + strings.Repeat("v1="+junk+",", spec.MaxSignatures-1) + "v1=" + vecStripeV1}, vecStripeBody, nil},
		{"valid v1 after MaxSignatures others is not considered", stripeOne, stripeNow, []string{"t=1700000000," + strings.Repeat("v1="+junk+",", spec.MaxSignatures) + "v1=" + vecStripeV1}, vecStripeBody, spec.ErrNoValidSignature},
		{"t after many v1 is still read", stripeOne, time.Unix(vecStripeT, 0).Add(time.Hour), []string{strings.Repeat("v1="+junk+",", 100) + "t=1700000000"}, vecStripeBody, spec.ErrTooOld},
	}

	at := func(unix int64, d time.Duration) time.Time { return time.Unix(unix, 0).Add(d) }
	goNow, nodeNow, pyNow := at(vecPaddleGoTS, time.Minute), at(vecPaddleNodeTS, time.Second), at(vecPaddlePyTS, time.Second)
	goOne, nodeOne := []string{vecPaddleGoSecret}, []string{vecPaddleNodeSecret}
	paddleCases := []published{
		{"go sdk vector", goOne, goNow, []string{vecPaddleGoHeader}, vecPaddleGoBody, nil},
		{"node sdk vector", nodeOne, nodeNow, []string{vecPaddleNodeHeader}, vecPaddleNodeBody, nil},
		{"node sdk vector, two h1 and an h2", nodeOne, nodeNow, []string{vecPaddleNodeMultiHeader}, vecPaddleNodeMultiBody, nil},
		{"python sdk rotation vector, three secrets, the last matches", []string{vecPaddlePySecretBad1, vecPaddlePySecretBad2, vecPaddlePySecretGood}, pyNow, []string{vecPaddlePyHeader}, vecPaddlePyBody, nil},
		{"python sdk rotation vector, matching secret first", []string{vecPaddlePySecretGood, vecPaddlePySecretBad1}, pyNow, []string{vecPaddlePyHeader}, vecPaddlePyBody, nil},
		{"python sdk rotation vector, only the secrets that fail", []string{vecPaddlePySecretBad1, vecPaddlePySecretBad2}, pyNow, []string{vecPaddlePyHeader}, vecPaddlePyBody, spec.ErrNoValidSignature},
		{"rotation: the old h1 and the new h1, new secret configured", goOne, goNow, []string{"ts=1710929255;h1=" + junk + ";h1=" + vecPaddleGoH1}, vecPaddleGoBody, nil},
		{"uppercase hex decodes to the same bytes", goOne, goNow, []string{"ts=1710929255;h1=" + strings.ToUpper(vecPaddleGoH1)}, vecPaddleGoBody, nil},
		{"keys are case-sensitive", goOne, goNow, []string{strings.Replace(vecPaddleGoHeader, "h1=", "H1=", 1)}, vecPaddleGoBody, spec.ErrNoValidSignature},
		{"elements in any order", nodeOne, nodeNow, []string{"h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9;ts=1698796800"}, vecPaddleNodeBody, nil},
		{"node sdk: wrong secret", []string{"INVALID_VALID_SECRET"}, nodeNow, []string{vecPaddleNodeHeader}, vecPaddleNodeBody, spec.ErrNoValidSignature},
		{"node sdk: body with more spaces", nodeOne, nodeNow, []string{vecPaddleNodeHeader}, `{ "data": [ "1", "2" ]}`, spec.ErrNoValidSignature},
		{"node sdk: timestamp 9876 is too old", nodeOne, nodeNow, []string{"ts=9876;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"}, vecPaddleNodeBody, spec.ErrTooOld},
		{"node sdk: header without ts or h1", nodeOne, nodeNow, []string{"invalid_header"}, vecPaddleNodeBody, spec.ErrMissingPart},
		{"node sdk: missing ts", nodeOne, nodeNow, []string{"h1=invalid_header"}, vecPaddleNodeBody, spec.ErrMissingPart},
		{"node sdk: missing h1", nodeOne, at(1234, 0), []string{"ts=1234;h2=invalid_header"}, vecPaddleNodeBody, spec.ErrNoValidSignature},
		{"one byte of the body changed", goOne, goNow, []string{vecPaddleGoHeader}, strings.Replace(vecPaddleGoBody, `"1000"`, `"1001"`, 1), spec.ErrNoValidSignature},
		{"body with a trailing newline", goOne, goNow, []string{vecPaddleGoHeader}, vecPaddleGoBody + "\n", spec.ErrNoValidSignature},
		{"empty body", goOne, goNow, []string{vecPaddleGoHeader}, "", spec.ErrNoValidSignature},
		{"secret without its pdl_ntfset_ prefix", []string{strings.TrimPrefix(vecPaddleGoSecret, "pdl_ntfset_")}, goNow, []string{vecPaddleGoHeader}, vecPaddleGoBody, spec.ErrNoValidSignature},
		{"timestamp changed", goOne, goNow, []string{strings.Replace(vecPaddleGoHeader, "1710929255", "1710929256", 1)}, vecPaddleGoBody, spec.ErrNoValidSignature},
		{"missing header", goOne, goNow, nil, vecPaddleGoBody, spec.ErrNotSigned},
		{"empty header", goOne, goNow, []string{""}, vecPaddleGoBody, spec.ErrNotSigned},
		{"header sent twice", goOne, goNow, []string{vecPaddleGoHeader, vecPaddleGoHeader}, vecPaddleGoBody, spec.ErrInvalidHeader},
		{"signature under another scheme only", goOne, goNow, []string{strings.Replace(vecPaddleGoHeader, "h1=", "h2=", 1)}, vecPaddleGoBody, spec.ErrNoValidSignature},
		{"h1 one byte short", goOne, goNow, []string{vecPaddleGoHeader[:len(vecPaddleGoHeader)-2]}, vecPaddleGoBody, spec.ErrNoValidSignature},
		{"h1 empty", goOne, goNow, []string{"ts=1710929255;h1="}, vecPaddleGoBody, spec.ErrNoValidSignature},
		{"just inside the tolerance", goOne, at(vecPaddleGoTS, 5*time.Minute), []string{vecPaddleGoHeader}, vecPaddleGoBody, nil},
		{"older than the tolerance", goOne, at(vecPaddleGoTS, 5*time.Minute+time.Second), []string{vecPaddleGoHeader}, vecPaddleGoBody, spec.ErrTooOld},
		{"old timestamp refused before the signature is checked", goOne, at(vecPaddleGoTS, time.Hour), []string{"ts=1710929255;h1=" + junk}, vecPaddleGoBody, spec.ErrTooOld},
		{"ahead of the clock within the tolerance", goOne, at(vecPaddleGoTS, -5*time.Minute), []string{vecPaddleGoHeader}, vecPaddleGoBody, nil},
		{"ahead of the clock by more than the tolerance", goOne, at(vecPaddleGoTS, -5*time.Minute-time.Second), []string{vecPaddleGoHeader}, vecPaddleGoBody, spec.ErrTooNew},
		{"ts zero", goOne, goNow, []string{"ts=0;h1=" + junk}, vecPaddleGoBody, spec.ErrTooOld},
		{"valid h1 within the first MaxSignatures", goOne, goNow, []string{"ts=1710929255;" + strings.Repeat("h1="+junk+";", spec.MaxSignatures-1) + "h1=" + vecPaddleGoH1}, vecPaddleGoBody, nil},
		{"valid h1 after MaxSignatures others is not considered", goOne, goNow, []string{"ts=1710929255;" + strings.Repeat("h1="+junk+";", spec.MaxSignatures) + "h1=" + vecPaddleGoH1}, vecPaddleGoBody, spec.ErrNoValidSignature},
	}

	for _, g := range []struct {
		name, header string
		cases        []published
	}{{"stripe", "Stripe-Signature", stripeCases}, {"paddle", "Paddle-Signature", paddleCases}} {
		for _, tc := range g.cases {
			t.Run(g.name+"/"+tc.name, func(t *testing.T) {
				p, err := spec.NewBuiltin(g.name, tc.secrets, nil, func() time.Time { return tc.now })
				require.NoError(t, err)
				h := http.Header{}
				for _, v := range tc.header {
					h.Add(g.header, v)
				}
				err = p.Verify(context.Background(), providers.Delivery{Header: h, Body: []byte(tc.body)})
				if tc.want == nil {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, tc.want)
				require.ErrorIs(t, err, providers.ErrUnauthorized)
				for _, secret := range append(tc.secrets, junk, vecStripeV1, vecStripeV1Rolled, vecPaddleGoH1, vecPaddleNodeMultiH1) {
					require.NotContains(t, err.Error(), secret, "error messages must not quote secrets or signatures")
				}
			})
		}
	}
}

// TestPublishedVectorsSign: the built-in specs sign the vectors' bodies
// at the vectors' times into the published headers, so that `webhookd
// replay` and every test that signs through them send what the gateway
// sends.
func TestPublishedVectorsSign(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		at           int64
		body, header string
		want         string
	}{
		{"stripe", vecStripeSecret, vecStripeT, vecStripeBody, "Stripe-Signature", vecStripeHeader},
		{"stripe", vecStripeSecretRolled, vecStripeT, vecStripeBody, "Stripe-Signature", "t=1700000000,v1=" + vecStripeV1Rolled},
		{"paddle", vecPaddleGoSecret, vecPaddleGoTS, vecPaddleGoBody, "Paddle-Signature", vecPaddleGoHeader},
		{"paddle", vecPaddleNodeSecret, vecPaddleNodeTS, vecPaddleNodeBody, "Paddle-Signature", vecPaddleNodeHeader},
	} {
		h, err := spec.SignBuiltin(tc.name, tc.secret, time.Unix(tc.at, 0), []byte(tc.body))
		require.NoError(t, err)
		require.Equal(t, tc.want, h.Get(tc.header), "%s under %s", tc.name, tc.secret)
	}
}
