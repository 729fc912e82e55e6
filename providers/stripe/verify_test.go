package stripe_test

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
	"github.com/webhookd/webhookd/providers/stripe"
)

// The signing vectors of docs/providers.md ("Stripe"), checked against
// Python hmac, openssl and stripe-go v86.2.0.
const (
	vecSecret       = "whsec_test_secret"
	vecSecretRolled = "whsec_test_secret_rolled_key"
	vecT            = 1700000000
	vecBody         = `{"id":"evt_test_webhook","object":"event"}`
	vecV1           = "d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990"
	vecV1Rolled     = "7548122dce5e2b728b67327c07959ace6ce459f5ca13822932dac476fc4e0005"
	// vecV0 is the fake test-mode signature from Stripe's docs example.
	vecV0 = "6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39"

	vecHeader         = "t=1700000000,v1=" + vecV1
	vecRotationHeader = "t=1700000000,v1=" + vecV1 + ",v1=" + vecV1Rolled + ",v0=" + vecV0
)

// vecNow is the pinned clock: a minute after the vectors were signed.
var vecNow = time.Unix(vecT+60, 0)

const tolerance = 5 * time.Minute

func newAdapter(t testing.TB, now time.Time, secrets ...string) *stripe.Adapter {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{vecSecret}
	}
	a, err := stripe.New(secrets, tolerance, stripe.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	return a
}

func sigHeader(values ...string) http.Header {
	h := http.Header{}
	for _, v := range values {
		h.Add(stripe.HeaderName, v)
	}
	return h
}

func TestVerify(t *testing.T) {
	junkV1 := strings.Repeat("ab", 32) // 32 bytes of hex that match nothing
	tests := []struct {
		name    string
		secrets []string // default: vecSecret
		now     time.Time
		header  http.Header
		body    string
		wantErr error
	}{
		// Vectors.
		{name: "vector", header: sigHeader(vecHeader), body: vecBody},
		{name: "vector with the rolled secret", secrets: []string{vecSecretRolled},
			header: sigHeader("t=1700000000,v1=" + vecV1Rolled), body: vecBody},
		{name: "rotation header, old secret configured", header: sigHeader(vecRotationHeader), body: vecBody},
		{name: "rotation header, new secret configured", secrets: []string{vecSecretRolled},
			header: sigHeader(vecRotationHeader), body: vecBody},
		{name: "rotation header, both configured", secrets: []string{vecSecretRolled, vecSecret},
			header: sigHeader(vecRotationHeader), body: vecBody},
		{name: "one v1 against the second of two secrets", secrets: []string{vecSecretRolled, vecSecret},
			header: sigHeader(vecHeader), body: vecBody},
		{name: "uppercase hex decodes like stripe-go", header: sigHeader("t=1700000000,v1=" + strings.ToUpper(vecV1)), body: vecBody},
		{name: "elements in any order", header: sigHeader("v0=" + vecV0 + ",v1=" + vecV1 + ",t=1700000000"), body: vecBody},
		{name: "non-hex v1 skipped, next v1 matches", header: sigHeader("t=1700000000,v1=zz,v1=" + vecV1), body: vecBody},
		{name: "unknown scheme ignored", header: sigHeader("t=1700000000,v2=xyz,v1=" + vecV1), body: vecBody},
		{name: "same signature under v0 only", header: sigHeader("t=1700000000,v0=" + vecV1),
			body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "body with an extra space", header: sigHeader(vecHeader),
			body: `{"id":"evt_test_webhook", "object":"event"}`, wantErr: stripe.ErrNoValidSignature},

		// Tampering.
		{name: "one byte of the body changed", header: sigHeader(vecHeader),
			body: `{"id":"evt_test_webhooK","object":"event"}`, wantErr: stripe.ErrNoValidSignature},
		{name: "body with a trailing newline", header: sigHeader(vecHeader),
			body: vecBody + "\n", wantErr: stripe.ErrNoValidSignature},
		{name: "empty body", header: sigHeader(vecHeader), wantErr: stripe.ErrNoValidSignature},
		{name: "wrong secret", secrets: []string{"whsec_other"}, header: sigHeader(vecHeader),
			body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "secret without the whsec_ prefix", secrets: []string{"test_secret"}, header: sigHeader(vecHeader),
			body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "timestamp changed", header: sigHeader("t=1700000001,v1=" + vecV1),
			body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "timestamp with a leading zero is the same number", header: sigHeader("t=01700000000,v1=" + vecV1), body: vecBody},
		{name: "missing header", header: http.Header{}, body: vecBody, wantErr: stripe.ErrNotSigned},
		{name: "nil header", body: vecBody, wantErr: stripe.ErrNotSigned},
		{name: "empty header", header: sigHeader(""), body: vecBody, wantErr: stripe.ErrNotSigned},
		{name: "header sent twice", header: sigHeader(vecHeader, vecHeader), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "header without t is too old", header: sigHeader("v1=" + vecV1), body: vecBody, wantErr: stripe.ErrTooOld},
		{name: "header with only t", header: sigHeader("t=1700000000"), body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "t not a number", header: sigHeader("t=yesterday,v1=" + vecV1), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "t empty", header: sigHeader("t=,v1=" + vecV1), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "t fractional", header: sigHeader("t=1700000000.5,v1=" + vecV1), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "t overflows int64", header: sigHeader("t=99999999999999999999,v1=" + vecV1), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "element without =", header: sigHeader("t=1700000000,v1"), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "element with two =", header: sigHeader("t=1700000000,v1=" + vecV1 + "="), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "trailing comma", header: sigHeader(vecHeader + ","), body: vecBody, wantErr: stripe.ErrInvalidHeader},
		{name: "space after comma", header: sigHeader("t=1700000000, v1=" + vecV1), body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "non-hex v1", header: sigHeader("t=1700000000,v1=" + strings.Repeat("g", 64)), body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "v1 one byte short", header: sigHeader("t=1700000000,v1=" + vecV1[:62]), body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "v1 one byte long", header: sigHeader(vecHeader + "00"), body: vecBody, wantErr: stripe.ErrNoValidSignature},
		{name: "v1 empty", header: sigHeader("t=1700000000,v1="), body: vecBody, wantErr: stripe.ErrNoValidSignature},

		// Tolerance.
		{name: "just inside the tolerance", now: time.Unix(vecT, 0).Add(tolerance), header: sigHeader(vecHeader), body: vecBody},
		{name: "old timestamp", now: time.Unix(vecT, 0).Add(tolerance + time.Second),
			header: sigHeader(vecHeader), body: vecBody, wantErr: stripe.ErrTooOld},
		{name: "old timestamp is rejected before the signature is checked", now: time.Unix(vecT, 0).Add(time.Hour),
			header: sigHeader("t=1700000000,v1=" + junkV1), body: vecBody, wantErr: stripe.ErrTooOld},
		{name: "future timestamp accepted", now: time.Unix(vecT, 0).Add(-time.Hour), header: sigHeader(vecHeader), body: vecBody},
		{name: "negative timestamp", header: sigHeader("t=-1700000000,v1=" + vecV1), body: vecBody, wantErr: stripe.ErrTooOld},

		// Abuse.
		{name: "oversized header", body: vecBody, wantErr: stripe.ErrInvalidHeader,
			header: sigHeader(vecHeader + ",x=" + strings.Repeat("a", stripe.MaxHeaderBytes))},
		{name: "header of exactly the maximum size", body: vecBody,
			header: sigHeader(vecHeader + ",x=" + strings.Repeat("a", stripe.MaxHeaderBytes-len(vecHeader)-3))},
		{name: "valid v1 within the first MaxSignatures", body: vecBody,
			header: sigHeader("t=1700000000," + strings.Repeat("v1="+junkV1+",", stripe.MaxSignatures-1) + "v1=" + vecV1)},
		{name: "valid v1 after MaxSignatures others is not considered", body: vecBody, wantErr: stripe.ErrNoValidSignature,
			header: sigHeader("t=1700000000," + strings.Repeat("v1="+junkV1+",", stripe.MaxSignatures) + "v1=" + vecV1)},
		{name: "t after many v1 is still read", body: vecBody, wantErr: stripe.ErrTooOld, now: time.Unix(vecT, 0).Add(time.Hour),
			header: sigHeader(strings.Repeat("v1="+junkV1+",", 100) + "t=1700000000")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = vecNow
			}
			a := newAdapter(t, now, tt.secrets...)
			err := a.Verify(context.Background(), providers.Delivery{Header: tt.header, Body: []byte(tt.body)})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, providers.ErrUnauthorized)
			require.NotErrorIs(t, err, providers.ErrMalformed)
			for _, secret := range []string{vecSecret, vecSecretRolled, vecV1, vecV1Rolled, junkV1} {
				require.NotContains(t, err.Error(), secret, "error messages must not quote secrets or signatures")
			}
		})
	}
}

func TestVerifyZeroAdapterRejects(t *testing.T) {
	var a stripe.Adapter
	for _, h := range []http.Header{nil, sigHeader(vecHeader), sigHeader("t=9999999999,v1=" + vecV1)} {
		err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: []byte(vecBody)})
		require.ErrorIs(t, err, providers.ErrUnauthorized)
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{stripe.ErrNotSigned, stripe.ErrInvalidHeader, stripe.ErrNoValidSignature, stripe.ErrTooOld}
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
		{"one secret", []string{vecSecret}, tolerance, false},
		{"two secrets during a rotation", []string{vecSecretRolled, vecSecret}, tolerance, false},
		{"nil secrets", nil, tolerance, true},
		{"no secrets", []string{}, tolerance, true},
		{"empty secret", []string{vecSecret, ""}, tolerance, true},
		{"secret with a leading space", []string{vecSecret, " " + vecSecretRolled}, tolerance, true},
		{"secret with a trailing newline", []string{vecSecret + "\n"}, tolerance, true},
		{"zero tolerance", []string{vecSecret}, 0, true},
		{"negative tolerance", []string{vecSecret}, -time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := stripe.New(tt.secrets, tt.tolerance)
			if !tt.wantErr {
				require.NoError(t, err)
				require.Equal(t, "stripe", a.Name())
				return
			}
			require.Error(t, err)
			require.Nil(t, a)
			for _, s := range tt.secrets {
				if s != "" {
					require.NotContains(t, err.Error(), s)
				}
			}
		})
	}
}

func TestNewCopiesSecrets(t *testing.T) {
	secrets := []string{vecSecret}
	a := newAdapter(t, vecNow, secrets...)
	secrets[0] = "whsec_changed"
	require.NoError(t, a.Verify(context.Background(), providers.Delivery{Header: sigHeader(vecHeader), Body: []byte(vecBody)}))
}

func BenchmarkVerify(b *testing.B) {
	// Two secrets, the matching one second: the worst case of a rotation.
	a := newAdapter(b, vecNow, vecSecretRolled, vecSecret)
	for _, size := range []int{1 << 10, 1 << 20} {
		body := []byte(strings.Repeat("x", size))
		h := sigHeader(stripe.SignatureHeader(vecSecret, time.Unix(vecT, 0), body))
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

// TestVerifyAllocations bounds what verifying a delivery allocates, with two
// secrets: the hex-decoded v1 signature, parseHeader's list of them and the
// signed prefix (3). The adapter keeps one signature.HMACKey per secret
// because building an HMAC per secret costs six objects more per secret
// (15 in all) on every delivery.
func TestVerifyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop entries at random")
	}
	a := newAdapter(t, vecNow, vecSecretRolled, vecSecret)
	h, body := sigHeader(vecHeader), []byte(vecBody)
	allocs := testing.AllocsPerRun(100, func() {
		if err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations", allocs)
	require.LessOrEqual(t, allocs, 3.0)
}
