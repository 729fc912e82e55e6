package providers_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

func TestOne(t *testing.T) {
	d := providers.Delivery{Header: http.Header{"A": {"b"}}, Body: []byte("evt_1")}
	items, err := providers.One(d, func(body []byte) (providers.Event, error) {
		return providers.Event{Key: string(body), Fingerprint: "f"}, nil
	})
	require.NoError(t, err)
	require.Equal(t, []providers.Item{{Event: providers.Event{Key: "evt_1", Fingerprint: "f"}, Body: d.Body}}, items,
		"one item, forwarded with the delivery's body")
	_, err = providers.One(d, func([]byte) (providers.Event, error) { return providers.Event{}, providers.ErrMalformed })
	require.ErrorIs(t, err, providers.ErrMalformed)
}

func TestCheckTolerance(t *testing.T) {
	env := providers.Env{Var: func(name string) string { return "WEBHOOKD_" + name }, Retention: time.Hour}
	tests := []struct {
		name      string
		tolerance time.Duration
		enabled   bool
		err       string
	}{
		{"positive, below retention", 5 * time.Minute, true, ""},
		{"zero while off", 0, false, "WEBHOOKD_ACME_TOLERANCE: must be positive (0 would disable the replay check)"},
		{"negative while on", -time.Second, true, "WEBHOOKD_ACME_TOLERANCE: must be positive (0 would disable the replay check)"},
		{"under a second", 999 * time.Millisecond, false, "WEBHOOKD_ACME_TOLERANCE: 999ms is shorter than 1s: signed timestamps count whole seconds, so genuine events would be refused"},
		{"a second", time.Second, true, ""},
		{"at retention while on", time.Hour, true, "WEBHOOKD_ACME_TOLERANCE: 1h0m0s must be shorter than WEBHOOKD_RETENTION (1h0m0s): a capture older than the retention would be forwarded again"},
		{"at retention while off", time.Hour, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := env.CheckTolerance("ACME_TOLERANCE", tc.tolerance, tc.enabled)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.err)
		})
	}
}

// verifier is an adapter with the three methods every provider has, and no
// optional interface.
type verifier struct{}

func (verifier) Name() string                                       { return "plain" }
func (verifier) Verify(context.Context, providers.Delivery) error   { return nil }
func (verifier) Parse(providers.Delivery) ([]providers.Item, error) { return nil, nil }

// signingAcker is verifier that signs and acknowledges.
type signingAcker struct{ verifier }

var testAck = &providers.Acknowledgement{Status: http.StatusOK, Body: []byte("[accepted]")}

func (signingAcker) Sign(body []byte) (providers.Delivery, error) {
	return providers.Delivery{Header: http.Header{"X-Sig": {"s"}}, Body: body}, nil
}
func (signingAcker) Ack() *providers.Acknowledgement { return testAck }

// TestOptionalInterfaces: Sign signs with a Signer and names the provider
// that is none with an error wrapping ErrCannotSign; AckOf is an
// Acknowledger's answer, nil for any other adapter.
func TestOptionalInterfaces(t *testing.T) {
	d, err := providers.Sign(signingAcker{}, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, providers.Delivery{Header: http.Header{"X-Sig": {"s"}}, Body: []byte("b")}, d)
	_, err = providers.Sign(verifier{}, []byte("b"))
	require.ErrorIs(t, err, providers.ErrCannotSign)
	require.EqualError(t, err, "provider plain cannot sign: provider's signature cannot be made here")

	require.Same(t, testAck, providers.AckOf(signingAcker{}))
	require.Nil(t, providers.AckOf(verifier{}))
}
