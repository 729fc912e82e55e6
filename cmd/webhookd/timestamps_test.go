package main

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/signature"
)

// TestTolerancesBelowRetention holds every provider with a tolerance, Go
// adapter or spec, to the contract's rule: a signed timestamp older than
// WEBHOOKD_RETENTION is 401, so while the provider is enabled no value of
// its tolerance may reach the retention, 0 (a default, or "no check")
// included. Each refusal names the tolerance variable.
func TestTolerancesBelowRetention(t *testing.T) {
	checked := 0
	for _, e := range providerTable() {
		vars := envVars(e.Settings())
		var tolerance string
		environ := []string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/", "WEBHOOKD_RETENTION=1h"}
		for _, v := range vars {
			if strings.HasSuffix(v.key, "_TOLERANCE") {
				tolerance = v.key
			}
			if testValue(v) != "" {
				environ = append(environ, v.key+"="+testValue(v))
			}
		}
		if tolerance == "" {
			continue
		}
		checked++
		t.Run(e.Name, func(t *testing.T) {
			_, err := loadConfigFrom(append(environ, tolerance+"=30m"))
			require.NoError(t, err, "enabled, with a tolerance below the retention")
			for _, value := range []string{"0s", "1h", "2h"} {
				_, err := loadConfigFrom(append(environ, tolerance+"="+value))
				require.Error(t, err, "%s=%s with WEBHOOKD_RETENTION=1h", tolerance, value)
				require.True(t, strings.HasPrefix(err.Error(), tolerance+": "), err.Error())
			}
		})
	}
	require.GreaterOrEqual(t, checked, 6, "stripe, paddle, standard, doku, paypal, airwallex")
}

// TestSignedTimestampsBoundedByRetention: as serve builds them, providers
// whose signed time has no tolerance of its own (Mercado Pago's ts,
// Razorpay's created_at without WEBHOOKD_RAZORPAY_MAX_AGE) refuse one
// older than WEBHOOKD_RETENTION, and accept a recent one.
func TestSignedTimestampsBoundedByRetention(t *testing.T) {
	cfg, err := loadConfigFrom([]string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/", "WEBHOOKD_RETENTION=48h",
		"WEBHOOKD_MERCADOPAGO_SECRETS=mp_secret", "WEBHOOKD_RAZORPAY_SECRETS=rzp_secret"})
	require.NoError(t, err)
	reg, err := buildRegistry(cfg)
	require.NoError(t, err)
	ctx := context.Background()

	mp, ok := reg.Lookup("mercadopago")
	require.True(t, ok)
	specs, err := spec.Builtin()
	require.NoError(t, err)
	i := slices.IndexFunc(specs, func(s *spec.Spec) bool { return s.Name() == "mercadopago" })
	require.GreaterOrEqual(t, i, 0)
	body := []byte(`{"action":"payment.updated","data":{"id":"123456"},"type":"payment"}`)
	for _, tc := range []struct {
		age time.Duration
		ok  bool
	}{{time.Hour, true}, {72 * time.Hour, false}} {
		signer, err := specs[i].New([]string{"mp_secret"}, nil, func() time.Time { return time.Now().Add(-tc.age) })
		require.NoError(t, err)
		d, err := signer.Sign(body)
		require.NoError(t, err)
		if tc.ok {
			require.NoError(t, mp.Verify(ctx, d), "mercadopago, signed %s ago", tc.age)
		} else {
			require.ErrorIs(t, mp.Verify(ctx, d), providers.ErrUnauthorized, "mercadopago, signed %s ago", tc.age)
		}
	}

	rzp, ok := reg.Lookup("razorpay")
	require.True(t, ok)
	for _, tc := range []struct {
		age time.Duration
		ok  bool
	}{{time.Hour, true}, {72 * time.Hour, false}} {
		created := strconv.FormatInt(time.Now().Add(-tc.age).Unix(), 10)
		body := []byte(`{"entity":"event","event":"payment.captured","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_1"}}},"created_at":` + created + `}`)
		d := providers.Delivery{Header: http.Header{"X-Razorpay-Signature": {signature.HMACSHA256Hex([]byte("rzp_secret"), body)}}, Body: body}
		if tc.ok {
			require.NoError(t, rzp.Verify(ctx, d), "razorpay, created %s ago", tc.age)
		} else {
			require.ErrorIs(t, rzp.Verify(ctx, d), providers.ErrTimestamp, "razorpay, created %s ago", tc.age)
		}
	}
}
