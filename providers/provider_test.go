package providers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// bodyKeyed keys on the body only.
type bodyKeyed struct{}

func (bodyKeyed) Name() string                     { return "body" }
func (bodyKeyed) Verify(http.Header, []byte) error { return nil }
func (bodyKeyed) Parse(b []byte) (providers.Event, error) {
	return providers.Event{Key: string(b), Fingerprint: "f"}, nil
}

// headerKeyed keys on a header; its Parse cannot.
type headerKeyed struct{ bodyKeyed }

func (headerKeyed) Parse([]byte) (providers.Event, error) {
	return providers.Event{}, providers.ErrMalformed
}
func (headerKeyed) ParseHeader(h http.Header, b []byte) (providers.Event, error) {
	return providers.Event{Key: h.Get("Message-Id"), Type: string(b), Fingerprint: "f"}, nil
}

func TestParseDelivery(t *testing.T) {
	h := http.Header{"Message-Id": {"msg_1"}}
	ev, err := providers.ParseDelivery(bodyKeyed{}, h, []byte("evt_1"))
	require.NoError(t, err)
	require.Equal(t, "evt_1", ev.Key, "an adapter keyed by the body is parsed from the body")
	ev, err = providers.ParseDelivery(headerKeyed{}, h, []byte("a.b"))
	require.NoError(t, err)
	require.Equal(t, providers.Event{Key: "msg_1", Type: "a.b", Fingerprint: "f"}, ev, "a HeaderParser gets the headers")
}

// networked verifies only with a live context; its plain Verify refuses.
type networked struct{ bodyKeyed }

func (networked) Verify(http.Header, []byte) error { return providers.ErrUnauthorized }
func (networked) VerifyContext(ctx context.Context, _ http.Header, _ []byte) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %v", providers.ErrUnavailable, ctx.Err())
	}
	return nil
}

func TestVerifyDelivery(t *testing.T) {
	require.NoError(t, providers.VerifyDelivery(context.Background(), bodyKeyed{}, nil, nil), "a plain adapter is verified with Verify")
	require.NoError(t, providers.VerifyDelivery(context.Background(), networked{}, nil, nil), "a ContextVerifier gets VerifyContext")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, providers.VerifyDelivery(done, networked{}, nil, nil), providers.ErrUnavailable, "with the caller's context")
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
