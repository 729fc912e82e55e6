package receiver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// countedAck is stubProvider with an acknowledgement of its own
// (providers.Acknowledger), counting how often it is asked for it.
type countedAck struct {
	stubProvider
	asked *atomic.Int32
}

func (p countedAck) Ack() *providers.Acknowledgement {
	p.asked.Add(1)
	return &providers.Acknowledgement{Status: http.StatusOK, ContentType: "text/plain", Body: []byte("[accepted]")}
}

// TestAcknowledgerAskedOnce: a provider's acknowledgement is asked for once,
// when the receiver builds its routes, not per delivery; a provider that is
// no providers.Acknowledger gets the core service's answer.
func TestAcknowledgerAskedOnce(t *testing.T) {
	var asked atomic.Int32
	tests := []struct {
		name       string
		p          providers.Provider
		status     int
		body       string
		askedAfter int32
	}{
		{"no Acknowledger: the core's answer", stubProvider{}, http.StatusCreated, string(received), 0},
		{"an Acknowledger: its answer", countedAck{asked: &asked}, http.StatusOK, "[accepted]", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reg providers.Registry
			require.NoError(t, reg.Register(tt.p))
			h, err := New(Config{Providers: &reg, Store: nopStore{}, Forwarder: acceptingForwarder{}, MaxBodyBytes: 1 << 10,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.NoError(t, err)
			for range 3 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhooks/stub", strings.NewReader(`{}`)).WithContext(context.Background()))
				require.Equal(t, tt.status, rec.Code)
				require.Equal(t, tt.body, strings.TrimSpace(rec.Body.String()))
			}
			require.Equal(t, tt.askedAfter, asked.Load(), "asked once, at construction")
		})
	}
}
