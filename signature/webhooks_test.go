package signature_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/signature"
)

// The Standard Webhooks reference library's signing vector
// (libraries/go/webhook_test.go, TestWebhookSign; docs/providers.md).
const (
	swSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTS     = "1614265330"
	swBody   = `{"test": 2432232314}`
	swSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func swKey(t *testing.T) []byte {
	t.Helper()
	key, err := signature.DecodeWebhookSecret(swSecret)
	require.NoError(t, err)
	return key
}

func TestWebhookSignaturesReproduceTheVector(t *testing.T) {
	key := swKey(t)
	require.Equal(t, swSig, signature.WebhookSignatures([][]byte{key}, swID, swTS, []byte(swBody)))
	require.True(t, signature.MatchWebhookSignature(swSig, [][]byte{key}, swID, swTS, []byte(swBody)))
}

func TestMatchWebhookSignature(t *testing.T) {
	key := swKey(t)
	other := []byte("another key of 24 bytes!")
	otherSig := signature.WebhookSignatures([][]byte{other}, swID, swTS, []byte(swBody))
	bad := "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	tests := []struct {
		name         string
		list         string
		keys         [][]byte
		id, ts, body string
		want         bool
	}{
		{"vector", swSig, [][]byte{key}, swID, swTS, swBody, true},
		// The reference library's table: a valid signature among others.
		{"valid among bad and unknown versions", bad + " v2,bad " + swSig + " " + bad, [][]byte{key}, swID, swTS, swBody, true},
		{"rotation: second key signed it", swSig, [][]byte{other, key}, swID, swTS, swBody, true},
		{"rotation: two signatures, one key", otherSig + " " + swSig, [][]byte{key}, swID, swTS, swBody, true},
		{"extra spaces", "  " + swSig + "   ", [][]byte{key}, swID, swTS, swBody, true},
		{"v1, with an empty signature", "v1,", [][]byte{key}, swID, swTS, swBody, false},
		{"v1a is not v1", "v1a," + swSig[3:], [][]byte{key}, swID, swTS, swBody, false},
		{"no version", swSig[3:], [][]byte{key}, swID, swTS, swBody, false},
		{"only another key's signature", otherSig, [][]byte{key}, swID, swTS, swBody, false},
		{"body changed", swSig, [][]byte{key}, swID, swTS, `{"test": 2432232315}`, false},
		{"id changed", swSig, [][]byte{key}, swID + "x", swTS, swBody, false},
		{"timestamp changed", swSig, [][]byte{key}, swID, "1614265331", swBody, false},
		{"timestamp with a leading zero is other bytes", swSig, [][]byte{key}, swID, "0" + swTS, swBody, false},
		{"empty list", "", [][]byte{key}, swID, swTS, swBody, false},
		{"no keys", swSig, nil, swID, swTS, swBody, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, signature.MatchWebhookSignature(tt.list, tt.keys, tt.id, tt.ts, []byte(tt.body)))
		})
	}
}

func TestCheckWebhookTimestamp(t *testing.T) {
	now := time.Unix(1614265330, 0)
	const tol = 5 * time.Minute
	tests := []struct {
		name    string
		ts      string
		tol     time.Duration
		wantErr error
	}{
		{"now", "1614265330", tol, nil},
		{"exactly tolerance old", "1614265030", tol, nil},
		{"exactly tolerance ahead", "1614265630", tol, nil},
		{"one second too old", "1614265029", tol, signature.ErrTooOld},
		{"one second too new", "1614265631", tol, signature.ErrTooNew},
		{"milliseconds are far in the future", "1614265330000", tol, signature.ErrTooNew},
		{"zero", "0", tol, signature.ErrTooOld},
		{"leading zeros are digits", "01614265330", tol, nil},
		{"empty", "", tol, signature.ErrInvalidTimestamp},
		{"sign", "+1614265330", tol, signature.ErrInvalidTimestamp},
		{"negative", "-1", tol, signature.ErrInvalidTimestamp},
		{"fraction", "1614265330.5", tol, signature.ErrInvalidTimestamp},
		{"space", " 1614265330", tol, signature.ErrInvalidTimestamp},
		{"beyond int64", "99999999999999999999", tol, signature.ErrInvalidTimestamp},
		{"19 digits beyond int64", "9999999999999999999", tol, signature.ErrInvalidTimestamp},
		{"zero tolerance fails closed", "1614265330", 0, signature.ErrInvalidTolerance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := signature.CheckWebhookTimestamp(tt.ts, now, tt.tol)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

func TestDecodeWebhookSecret(t *testing.T) {
	key, err := signature.DecodeWebhookSecret(swSecret)
	require.NoError(t, err)
	want, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	require.Equal(t, want, key)

	// The reference library's negative cases: empty secret and whsec_
	// alone; and what is not a whsec_ secret at all.
	for _, bad := range []string{"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_MfKQ9r8G*KYq", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw ", "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		_, err := signature.DecodeWebhookSecret(bad)
		require.ErrorIs(t, err, signature.ErrWebhookSecret, "%q", bad)
		if len(bad) > 10 {
			require.NotContains(t, err.Error(), bad[6:])
		}
	}
}
