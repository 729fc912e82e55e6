package spec_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

// TestReplacedAllocations bounds what the built-in Stripe and Paddle specs
// allocate on every delivery: verifying one against three secrets of which
// the last signed it (nothing: keyed HMAC states are pooled per secret and
// the signature is compared in its own encoding), and parsing it (the
// object, its members, the event's strings and the slice of its item). A
// verify is on the path of every request anyone sends.
func TestReplacedAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop entries at random")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, header string
		secrets      []string
		at           int64
		signature    string
		body         []byte
		// verify and parse are the bounds (parse -1: not parsed).
		verify, parse float64
	}{
		{"paddle", "Paddle-Signature", []string{vecPaddlePySecretBad1, vecPaddlePySecretBad2, vecPaddlePySecretGood}, vecPaddlePyTS,
			vecPaddlePyHeader, []byte(vecPaddlePyBody), 0, -1}, // not an event,
		{"paddle", "Paddle-Signature", []string{"pdl_ntfset_a", "pdl_ntfset_b", vecPaddleGoSecret}, vecPaddleGoTS,
			vecPaddleGoHeader, []byte(vecPaddleGoBody), 0, 6},
		{"stripe", "Stripe-Signature", []string{"whsec_a", "whsec_b", vecStripeSecret}, vecStripeT,
			vecStripeHeader, []byte(vecStripeBody), 0, 5},
	} {
		p, err := spec.NewBuiltin(tc.name, tc.secrets, nil, func() time.Time { return time.Unix(tc.at+60, 0) })
		require.NoError(t, err)
		d := providers.Delivery{Header: http.Header{tc.header: {tc.signature}}, Body: tc.body}
		require.NoError(t, p.Verify(ctx, d))
		verify := testing.AllocsPerRun(100, func() {
			if err := p.Verify(ctx, d); err != nil {
				t.Fatal(err)
			}
		})
		require.LessOrEqual(t, verify, tc.verify, "%s verify", tc.name)
		if tc.parse < 0 {
			continue
		}
		parse := testing.AllocsPerRun(100, func() {
			if _, err := p.Parse(d); err != nil {
				t.Fatal(err)
			}
		})
		require.LessOrEqual(t, parse, tc.parse, "%s parse", tc.name)
	}
}
