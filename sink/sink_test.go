package sink

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSink(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)
	tests := []struct {
		name     string
		status   int
		method   string
		path     string
		header   map[string]string
		body     string
		wantLine string
		wantBody map[string]any
	}{
		{
			name: "a forwarded event", status: 200, method: "POST", path: "/",
			header: map[string]string{"Webhook-Source": "stripe", "Webhook-Provider": "stripe", "Idempotency-Key": "stripe:evt_1",
				"Webhook-Event-Type": "payment_intent.succeeded", "Webhook-Event-Id": "evt_1", "Content-Type": "application/json"},
			body:     `{"id":"evt_1"}`,
			wantLine: "03:04:05.006 Webhook-Source=stripe Webhook-Provider=stripe Idempotency-Key=stripe:evt_1 Webhook-Event-Type=payment_intent.succeeded Webhook-Event-Id=evt_1 Content-Type=application/json body=14B -> 200\n",
			wantBody: map[string]any{"received": true, "idempotency_key": "stripe:evt_1"},
		},
		{
			name: "rehearsing a failing core", status: 503, method: "POST", path: "/core/webhooks",
			header:   map[string]string{"Idempotency-Key": "midtrans:tx1:settlement", "Content-Type": "application/json; charset=utf-8"},
			body:     `{}`,
			wantLine: `03:04:05.006 POST /core/webhooks Webhook-Source=- Webhook-Provider=- Idempotency-Key=midtrans:tx1:settlement Webhook-Event-Type=- Webhook-Event-Id=- Content-Type="application/json; charset=utf-8" body=2B -> 503` + "\n",
			wantBody: map[string]any{"error": "webhookd sink answers 503 (--status)"},
		},
		{
			name: "hostile header cannot forge a line", status: 201, method: "PUT", path: "/",
			header:   map[string]string{"Webhook-Event-Type": "x\r\n03:04:05.006 fake"},
			wantLine: `03:04:05.006 PUT / Webhook-Source=- Webhook-Provider=- Idempotency-Key=- Webhook-Event-Type="x\r\n03:04:05.006 fake" Webhook-Event-Id=- Content-Type=- body=0B -> 201` + "\n",
			wantBody: map[string]any{"received": true, "idempotency_key": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			h, err := New(&out, tt.status, func() time.Time { return at })
			require.NoError(t, err)
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			for k, v := range tt.header {
				req.Header[k] = []string{v} // unvalidated, as a raw client could send
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tt.status, rec.Code)
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			var got map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			require.Equal(t, tt.wantBody, got)
			require.Equal(t, tt.wantLine, out.String())
			require.NotContains(t, out.String(), `"id"`, "the body is never printed")
		})
	}
}

func TestSinkTooLarge(t *testing.T) {
	var out bytes.Buffer
	h, err := New(&out, 200, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", io.LimitReader(zeros{}, MaxBodyBytes+1))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Contains(t, out.String(), "-> 413")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestNewRefusesNonFinalStatus(t *testing.T) {
	for _, s := range []int{0, 100, 199, 600, -1} {
		_, err := New(io.Discard, s, nil)
		require.Error(t, err, s)
	}
	for _, s := range []int{200, 204, 409, 503, 599} {
		_, err := New(io.Discard, s, nil)
		require.NoError(t, err, s)
	}
}
