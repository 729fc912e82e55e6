package providers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

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
