package dispatch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
)

func TestNewRequest(t *testing.T) {
	body := []byte(`{"id":"evt_1"}`)
	tests := []struct {
		name          string
		key           dedupe.Key
		provider, typ string
		ct            string
		want          dispatch.Request
	}{
		{
			name: "source, provider and event read from the key",
			key:  dedupe.Key{Source: "stripe", Event: "evt_1"}, typ: "charge.failed", ct: "application/json; charset=utf-8",
			want: dispatch.Request{
				Source: "stripe", Provider: "stripe", IdempotencyKey: "stripe:evt_1", EventKey: "evt_1",
				EventType: "charge.failed", ContentType: "application/json; charset=utf-8", Body: body,
			},
		},
		{
			name: "an event key holding a colon stays whole",
			key:  dedupe.Key{Source: "xendit", Event: "invoice.paid:inv_1"}, typ: "invoice.paid",
			want: dispatch.Request{
				Source: "xendit", Provider: "xendit", IdempotencyKey: "xendit:invoice.paid:inv_1", EventKey: "invoice.paid:inv_1",
				EventType: "invoice.paid", Body: body,
			},
		},
		{
			name: "a named source of a provider, to a destination: the Idempotency-Key leaves the destination out",
			key:  dedupe.Key{Source: "stripe-eu", Event: "evt_1", Destination: "ledger"}, provider: "stripe",
			want: dispatch.Request{
				Source: "stripe-eu", Provider: "stripe", IdempotencyKey: "stripe-eu:evt_1", EventKey: "evt_1", Body: body,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, dispatch.NewRequest(tc.key, tc.provider, tc.typ, tc.ct, body))
		})
	}
}

func TestRequestSetHeaders(t *testing.T) {
	tests := []struct {
		name string
		req  dispatch.Request
		want http.Header
	}{
		{
			name: "every header",
			req:  dispatch.NewRequest(dedupe.Key{Source: "stripe", Event: "evt_1"}, "", "charge.failed", "application/json; charset=utf-8", nil),
			want: http.Header{
				"Content-Type": {"application/json; charset=utf-8"}, "User-Agent": {"webhookd"},
				"Idempotency-Key": {"stripe:evt_1"}, "Webhook-Source": {"stripe"}, "Webhook-Provider": {"stripe"},
				"Webhook-Event-Id": {"evt_1"}, "Webhook-Event-Type": {"charge.failed"},
			},
		},
		{
			name: "JSON when the provider sent no Content-Type, no blank event type",
			req:  dispatch.NewRequest(dedupe.Key{Source: "midtrans", Event: "order-1"}, "", "", "", nil),
			want: http.Header{
				"Content-Type": {"application/json"}, "User-Agent": {"webhookd"},
				"Idempotency-Key": {"midtrans:order-1"}, "Webhook-Source": {"midtrans"}, "Webhook-Provider": {"midtrans"},
				"Webhook-Event-Id": {"order-1"},
			},
		},
		{
			name: "no blank Idempotency-Key",
			req:  dispatch.Request{ContentType: "application/x-www-form-urlencoded"},
			want: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "User-Agent": {"webhookd"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			tc.req.SetHeaders(h)
			require.Equal(t, tc.want, h)
		})
	}
}

// TestForwardSendsSetHeaders holds the Forwarder to SetHeaders, the one
// definition the admin console shows: the core receives those headers and,
// unsigned and untraced, no others of webhookd's.
func TestForwardSendsSetHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	t.Cleanup(srv.Close)
	req := dispatch.NewRequest(dedupe.Key{Source: "stripe", Event: "evt_1"}, "", "charge.failed", "", []byte(`{}`))
	res := newForwarder(t, srv.URL, nil).Forward(context.Background(), req)
	require.Equal(t, dispatch.Delivered, res.Outcome, "%v", res.Err)

	want := http.Header{}
	req.SetHeaders(want)
	sent := <-got
	for _, transport := range []string{"Accept-Encoding", "Content-Length"} {
		sent.Del(transport) // net/http's own, not webhookd's
	}
	require.Equal(t, want, sent)
}

// TestForwardSendsDestinationHeaders: a destination's own headers go with
// every attempt, and never replace one of SetHeaders'.
func TestForwardSendsDestinationHeaders(t *testing.T) {
	got := make(chan http.Header, 3)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	extra := http.Header{"Authorization": {"Bearer tok"}, "Idempotency-Key": {"forged"}}
	res := newForwarder(t, srv.URL, func(o *dispatch.Options) { o.Headers = extra }).
		Forward(context.Background(), dispatch.NewRequest(dedupe.Key{Source: "stripe", Event: "evt_1"}, "", "", "", []byte(`{}`)))
	require.Equal(t, dispatch.Delivered, res.Outcome, "%v", res.Err)
	require.Equal(t, 2, res.Attempts)
	for range 2 {
		h := <-got
		require.Equal(t, "Bearer tok", h.Get("Authorization"), "on every attempt")
		require.Equal(t, []string{"stripe:evt_1"}, h.Values("Idempotency-Key"))
	}
}
