package paddle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paddle"
)

// Paddle's published signing vectors (docs/providers.md, "paddle"), each
// from the test suite of one of Paddle's SDKs, recomputed with Python's hmac.
const (
	// paddle-go-sdk webhook_verifier_test.go.
	vecGoSecret = "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr"
	vecGoTS     = 1710929255
	vecGoHeader = "ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8"
	vecGoBody   = `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`

	// paddle-node-sdk webhooks-validator.node.test.ts: the spaces in the
	// body are signed, so the same body with more spaces must fail.
	vecNodeSecret      = "VALID_SECRET"
	vecNodeTS          = 1698796800
	vecNodeHeader      = "ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"
	vecNodeBody        = `{"data": ["1", "2"]}`
	vecNodeMultiBody   = `{"data": "value"}`
	vecNodeMultiH1     = "28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261"
	vecNodeMultiHeader = "ts=1698796800;h1=" + vecNodeMultiH1 + ";h1=" + vecNodeMultiH1 + ";h2=RANDOM_HASH"

	// paddle-python-sdk tests/Unit/Notification/test_Verifier.py: the
	// rotation header, with a non-hex h1 before the real one, checked
	// against three secrets of which only the last signed it.
	vecPyTS         = 1696195954
	vecPyHeader     = "ts=1696195954;h1=dummy;h1=d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02"
	vecPyBody       = "hello-world"
	vecPySecretBad1 = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_TjIG2BXbm83HPXqNfziwe506sBEdqL/4"
	vecPySecretBad2 = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_vB/yIOnTOCWIvpBadM5jzBZPHc7OmdSo"
	vecPySecretGood = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh"
)

const tolerance = 5 * time.Minute

func at(unix int64, d time.Duration) time.Time { return time.Unix(unix, 0).Add(d) }

func newAdapter(t testing.TB, now time.Time, secrets ...string) *paddle.Adapter {
	t.Helper()
	a, err := paddle.New(secrets, tolerance, paddle.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	return a
}

func sigHeader(values ...string) http.Header {
	h := http.Header{}
	for _, v := range values {
		h.Add(paddle.HeaderName, v)
	}
	return h
}

func TestVerify(t *testing.T) {
	junk := strings.Repeat("ab", 32) // 64 hex digits that match nothing
	goNow := at(vecGoTS, time.Minute)
	nodeNow := at(vecNodeTS, time.Second)
	pyNow := at(vecPyTS, time.Second)
	tests := []struct {
		name    string
		secrets []string
		now     time.Time
		header  http.Header
		body    string
		wantErr error
	}{
		// The SDK vectors.
		{name: "go sdk vector", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(vecGoHeader), body: vecGoBody},
		{name: "node sdk vector", secrets: []string{vecNodeSecret}, now: nodeNow, header: sigHeader(vecNodeHeader), body: vecNodeBody},
		{name: "node sdk vector, two h1 and an h2", secrets: []string{vecNodeSecret}, now: nodeNow,
			header: sigHeader(vecNodeMultiHeader), body: vecNodeMultiBody},
		{name: "python sdk rotation vector, three secrets, the last matches", now: pyNow,
			secrets: []string{vecPySecretBad1, vecPySecretBad2, vecPySecretGood}, header: sigHeader(vecPyHeader), body: vecPyBody},
		{name: "python sdk rotation vector, matching secret first", now: pyNow,
			secrets: []string{vecPySecretGood, vecPySecretBad1}, header: sigHeader(vecPyHeader), body: vecPyBody},
		{name: "python sdk rotation vector, only the secrets that fail", now: pyNow,
			secrets: []string{vecPySecretBad1, vecPySecretBad2}, header: sigHeader(vecPyHeader), body: vecPyBody, wantErr: paddle.ErrNoValidSignature},
		{name: "rotation: the old h1 and the new h1, new secret configured", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader("ts=1710929255;h1=" + junk + ";h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8"), body: vecGoBody},
		{name: "uppercase hex decodes to the same bytes", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader("ts=1710929255;h1=" + strings.ToUpper(vecGoHeader[len("ts=1710929255;h1="):])), body: vecGoBody},
		{name: "keys are case-sensitive", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(strings.Replace(vecGoHeader, "h1=", "H1=", 1)), body: vecGoBody, wantErr: paddle.ErrNoValidSignature},
		{name: "elements in any order", secrets: []string{vecNodeSecret}, now: nodeNow,
			header: sigHeader("h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9;ts=1698796800"), body: vecNodeBody},

		// Tampering (the node sdk's own negative cases first).
		{name: "node sdk: wrong secret", secrets: []string{"INVALID_VALID_SECRET"}, now: nodeNow,
			header: sigHeader(vecNodeHeader), body: vecNodeBody, wantErr: paddle.ErrNoValidSignature},
		{name: "node sdk: body with more spaces", secrets: []string{vecNodeSecret}, now: nodeNow,
			header: sigHeader(vecNodeHeader), body: `{ "data": [ "1", "2" ]}`, wantErr: paddle.ErrNoValidSignature},
		{name: "node sdk: timestamp 9876 is too old", secrets: []string{vecNodeSecret}, now: nodeNow,
			header: sigHeader("ts=9876;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"), body: vecNodeBody, wantErr: paddle.ErrTooOld},
		{name: "node sdk: header without ts or h1", secrets: []string{vecNodeSecret}, now: nodeNow,
			header: sigHeader("invalid_header"), body: vecNodeBody, wantErr: paddle.ErrInvalidHeader},
		{name: "node sdk: missing ts", secrets: []string{vecNodeSecret}, now: nodeNow,
			header: sigHeader("h1=invalid_header"), body: vecNodeBody, wantErr: paddle.ErrInvalidHeader},
		{name: "node sdk: missing h1", secrets: []string{vecNodeSecret}, now: at(1234, 0),
			header: sigHeader("ts=1234;h2=invalid_header"), body: vecNodeBody, wantErr: paddle.ErrNoValidSignature},
		{name: "one byte of the body changed", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(vecGoHeader),
			body: strings.Replace(vecGoBody, `"1000"`, `"1001"`, 1), wantErr: paddle.ErrNoValidSignature},
		{name: "body with a trailing newline", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(vecGoHeader),
			body: vecGoBody + "\n", wantErr: paddle.ErrNoValidSignature},
		{name: "empty body", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(vecGoHeader), wantErr: paddle.ErrNoValidSignature},
		{name: "secret without its pdl_ntfset_ prefix", secrets: []string{strings.TrimPrefix(vecGoSecret, "pdl_ntfset_")}, now: goNow,
			header: sigHeader(vecGoHeader), body: vecGoBody, wantErr: paddle.ErrNoValidSignature},
		{name: "timestamp changed", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(strings.Replace(vecGoHeader, "1710929255", "1710929256", 1)), body: vecGoBody, wantErr: paddle.ErrNoValidSignature},
		{name: "timestamp with a leading zero", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(strings.Replace(vecGoHeader, "ts=", "ts=0", 1)), body: vecGoBody, wantErr: paddle.ErrInvalidHeader},
		{name: "timestamp with a sign", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(strings.Replace(vecGoHeader, "ts=", "ts=+", 1)), body: vecGoBody, wantErr: paddle.ErrInvalidHeader},
		{name: "ts twice", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader("ts=1710929255;" + vecGoHeader), body: vecGoBody, wantErr: paddle.ErrInvalidHeader},
		{name: "ts overflows", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader("ts=99999999999999999999;h1=" + junk), body: vecGoBody, wantErr: paddle.ErrInvalidHeader},
		{name: "missing header", secrets: []string{vecGoSecret}, now: goNow, header: http.Header{}, body: vecGoBody, wantErr: paddle.ErrNotSigned},
		{name: "nil header", secrets: []string{vecGoSecret}, now: goNow, body: vecGoBody, wantErr: paddle.ErrNotSigned},
		{name: "empty header", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(""), body: vecGoBody, wantErr: paddle.ErrNotSigned},
		{name: "header sent twice", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(vecGoHeader, vecGoHeader),
			body: vecGoBody, wantErr: paddle.ErrInvalidHeader},
		{name: "trailing semicolon", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(vecGoHeader + ";"),
			body: vecGoBody, wantErr: paddle.ErrInvalidHeader},
		{name: "element with two =", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader(vecGoHeader + "="),
			body: vecGoBody, wantErr: paddle.ErrInvalidHeader},
		{name: "space after the semicolon hides the h1", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(strings.Replace(vecGoHeader, ";", "; ", 1)), body: vecGoBody, wantErr: paddle.ErrNoValidSignature},
		{name: "signature under another scheme only", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(strings.Replace(vecGoHeader, "h1=", "h2=", 1)), body: vecGoBody, wantErr: paddle.ErrNoValidSignature},
		{name: "h1 one byte short", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(vecGoHeader[:len(vecGoHeader)-2]), body: vecGoBody, wantErr: paddle.ErrNoValidSignature},
		{name: "h1 empty", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader("ts=1710929255;h1="),
			body: vecGoBody, wantErr: paddle.ErrNoValidSignature},

		// Tolerance, both ways.
		{name: "just inside the tolerance", secrets: []string{vecGoSecret}, now: at(vecGoTS, tolerance),
			header: sigHeader(vecGoHeader), body: vecGoBody},
		{name: "older than the tolerance", secrets: []string{vecGoSecret}, now: at(vecGoTS, tolerance+time.Second),
			header: sigHeader(vecGoHeader), body: vecGoBody, wantErr: paddle.ErrTooOld},
		{name: "old timestamp refused before the signature is checked", secrets: []string{vecGoSecret}, now: at(vecGoTS, time.Hour),
			header: sigHeader("ts=1710929255;h1=" + junk), body: vecGoBody, wantErr: paddle.ErrTooOld},
		{name: "ahead of the clock within the tolerance", secrets: []string{vecGoSecret}, now: at(vecGoTS, -tolerance),
			header: sigHeader(vecGoHeader), body: vecGoBody},
		{name: "ahead of the clock by more than the tolerance", secrets: []string{vecGoSecret}, now: at(vecGoTS, -tolerance-time.Second),
			header: sigHeader(vecGoHeader), body: vecGoBody, wantErr: paddle.ErrTooNew},
		{name: "far in the future", secrets: []string{vecGoSecret}, now: goNow,
			header: sigHeader(paddle.SignatureHeader(vecGoSecret, at(vecGoTS, 365*24*time.Hour), []byte(vecGoBody))), body: vecGoBody, wantErr: paddle.ErrTooNew},
		{name: "ts zero", secrets: []string{vecGoSecret}, now: goNow, header: sigHeader("ts=0;h1=" + junk), body: vecGoBody, wantErr: paddle.ErrTooOld},

		// Abuse.
		{name: "oversized header", secrets: []string{vecGoSecret}, now: goNow, body: vecGoBody, wantErr: paddle.ErrInvalidHeader,
			header: sigHeader(vecGoHeader + ";x=" + strings.Repeat("a", paddle.MaxHeaderBytes))},
		{name: "header of exactly the maximum size", secrets: []string{vecGoSecret}, now: goNow, body: vecGoBody,
			header: sigHeader(vecGoHeader + ";x=" + strings.Repeat("a", paddle.MaxHeaderBytes-len(vecGoHeader)-3))},
		{name: "valid h1 within the first MaxSignatures", secrets: []string{vecGoSecret}, now: goNow, body: vecGoBody,
			header: sigHeader("ts=1710929255;" + strings.Repeat("h1="+junk+";", paddle.MaxSignatures-1) + vecGoHeader[len("ts=1710929255;"):])},
		{name: "valid h1 after MaxSignatures others is not considered", secrets: []string{vecGoSecret}, now: goNow, body: vecGoBody,
			header:  sigHeader("ts=1710929255;" + strings.Repeat("h1="+junk+";", paddle.MaxSignatures) + vecGoHeader[len("ts=1710929255;"):]),
			wantErr: paddle.ErrNoValidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdapter(t, tt.now, tt.secrets...)
			err := a.Verify(context.Background(), providers.Delivery{Header: tt.header, Body: []byte(tt.body)})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			require.NotErrorIs(t, err, providers.ErrMalformed)
			for _, secret := range append(tt.secrets, junk, vecNodeMultiH1, "6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8") {
				require.NotContains(t, err.Error(), secret, "error messages must not quote secrets or signatures")
			}
		})
	}
}

func TestVerifyZeroAdapterRejects(t *testing.T) {
	var a paddle.Adapter
	for _, h := range []http.Header{nil, sigHeader(vecGoHeader), sigHeader(paddle.SignatureHeader("", time.Now(), []byte(vecGoBody)))} {
		require.ErrorIs(t, a.Verify(context.Background(), providers.Delivery{Header: h, Body: []byte(vecGoBody)}), providers.ErrUnauthorized)
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{paddle.ErrNotSigned, paddle.ErrInvalidHeader, paddle.ErrNoValidSignature, paddle.ErrTooOld, paddle.ErrTooNew}
	for i, a := range errs {
		require.ErrorIs(t, a, providers.ErrUnauthorized)
		for j, b := range errs {
			require.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name      string
		secrets   []string
		tolerance time.Duration
		wantErr   bool
	}{
		{"one secret", []string{vecGoSecret}, tolerance, false},
		{"two secrets during a rotation", []string{vecPySecretGood, vecGoSecret}, tolerance, false},
		{"no secrets", nil, tolerance, true},
		{"empty secret", []string{vecGoSecret, ""}, tolerance, true},
		{"secret with a leading space", []string{vecGoSecret, " " + vecPySecretGood}, tolerance, true},
		{"secret with a trailing newline", []string{vecGoSecret + "\n"}, tolerance, true},
		{"zero tolerance", []string{vecGoSecret}, 0, true},
		{"negative tolerance", []string{vecGoSecret}, -time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := paddle.New(tt.secrets, tt.tolerance)
			if !tt.wantErr {
				require.NoError(t, err)
				require.Equal(t, "paddle", a.Name())
				return
			}
			require.Error(t, err)
			require.Nil(t, a)
			for _, s := range tt.secrets {
				if strings.TrimSpace(s) != "" {
					require.NotContains(t, err.Error(), strings.TrimSpace(s))
				}
			}
		})
	}
}

func TestNewCopiesSecrets(t *testing.T) {
	secrets := []string{vecGoSecret}
	a := newAdapter(t, at(vecGoTS, 0), secrets...)
	secrets[0] = "pdl_ntfset_changed"
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: sigHeader(vecGoHeader), Body: []byte(vecGoBody)}))
}

func BenchmarkVerify(b *testing.B) {
	// Two secrets, the matching one second: the worst case of a rotation.
	now := at(vecGoTS, 0)
	a := newAdapter(b, now, vecPySecretGood, vecGoSecret)
	for _, size := range []int{1 << 10, 1 << 20} {
		body := []byte(strings.Repeat("x", size))
		h := sigHeader(paddle.SignatureHeader(vecGoSecret, now, body))
		b.Run(fmt.Sprintf("body=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestVerifyAllocations bounds what verifying a delivery allocates, against
// three secrets of which the last signed it: the header's parsed
// signatures and the signed prefix (3). Building an HMAC per secret cost
// seven objects more per secret (24 in all) on every delivery; the adapter
// keeps one signature.HMACKey per secret.
func TestVerifyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop entries at random")
	}
	a := newAdapter(t, at(vecPyTS, time.Minute), vecPySecretBad1, vecPySecretBad2, vecPySecretGood)
	h, body := sigHeader(vecPyHeader), []byte(vecPyBody)
	allocs := testing.AllocsPerRun(100, func() {
		if err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations", allocs)
	require.LessOrEqual(t, allocs, 3.0)
}
