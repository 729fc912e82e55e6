package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/dedupe"
)

// TestRecordViewHeaders checks that the view's headers are what
// dispatch.Request.SetHeaders sends for the record's key and request.
func TestRecordViewHeaders(t *testing.T) {
	tests := []struct {
		name     string
		rec      dedupe.Record
		provider string
		want     map[string]string
	}{
		{
			name: "stored request",
			rec: dedupe.Record{Key: "stripe:evt_1", State: dedupe.Completed,
				Request: dedupe.NewRequest("application/json; charset=utf-8", "charge.failed", []byte(`{}`), true)},
			want: map[string]string{
				"Content-Type": "application/json; charset=utf-8", "User-Agent": "webhookd",
				"Idempotency-Key": "stripe:evt_1", "Webhook-Source": "stripe", "Webhook-Provider": "stripe",
				"Webhook-Event-Id": "evt_1", "Webhook-Event-Type": "charge.failed",
			},
		},
		{
			name: "no Content-Type or event type received",
			rec: dedupe.Record{Key: "xendit:invoice.paid:inv_1", State: dedupe.Failed,
				Request: dedupe.NewRequest("", "", []byte(`{}`), false)},
			want: map[string]string{
				"Content-Type": "application/json", "User-Agent": "webhookd",
				"Idempotency-Key": "xendit:invoice.paid:inv_1", "Webhook-Source": "xendit", "Webhook-Provider": "xendit",
				"Webhook-Event-Id": "invoice.paid:inv_1",
			},
		},
		{
			name: "no request kept: its Content-Type is not guessed",
			rec:  dedupe.Record{Key: "midtrans:order-1", State: dedupe.Completed},
			want: map[string]string{
				"User-Agent": "webhookd", "Idempotency-Key": "midtrans:order-1",
				"Webhook-Source": "midtrans", "Webhook-Provider": "midtrans", "Webhook-Event-Id": "order-1",
			},
		},
		{
			name: "a named source's record for a destination: the Idempotency-Key of the event",
			rec: dedupe.Record{Key: "stripe-eu:evt_1\x1fledger", State: dedupe.Completed,
				Request: dedupe.NewRequest("application/json", "charge.failed", []byte(`{}`), true)},
			provider: "stripe",
			want: map[string]string{
				"Content-Type": "application/json", "User-Agent": "webhookd",
				"Idempotency-Key": "stripe-eu:evt_1", "Webhook-Source": "stripe-eu", "Webhook-Provider": "stripe",
				"Webhook-Event-Id": "evt_1", "Webhook-Event-Type": "charge.failed",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := admin.NewRecordView(&tc.rec, tc.provider, true)
			require.NotNil(t, v.Request)
			require.Equal(t, tc.want, v.Request.Headers)
		})
	}
}
