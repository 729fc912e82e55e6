package receiver_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/receiver"
)

// BenchmarkAdyenBatch compares what ten Adyen events cost the receiver when
// they come as one verified batch of ten items and as ten single-item
// requests, against an in-memory store and a forwarder that answers at once
// (as BenchmarkDelivery), with the delivery lines written as JSON:
//
//	go test ./receiver -run '^$' -bench AdyenBatch -benchmem -count 5
//
// One op is ten new events either way: ns/op and allocs/op compare
// directly.
func BenchmarkAdyenBatch(b *testing.B) {
	for _, shape := range []string{"batch_of_10", "10_singles"} {
		b.Run("shape="+shape, func(b *testing.B) { benchAdyen(b, shape == "batch_of_10") })
	}
}

func adyenBenchItem(n int) string {
	return fmt.Sprintf(`{"NotificationRequestItem":{"additionalData":{"hmacSignature":"","authCode":"062438"},`+
		`"amount":{"currency":"EUR","value":%d},"eventCode":"AUTHORISATION","eventDate":"2026-03-14T10:21:05+01:00",`+
		`"merchantAccountCode":"WebhookdShopECOM","merchantReference":"order-%d","paymentMethod":"visa",`+
		`"pspReference":"WHKDBENCH%07d","reason":"062438:1111:03/2030","success":"true"}}`, 1000+n, n, n)
}

func benchAdyen(b *testing.B, batch bool) {
	a, err := adyen.New([]string{adyenKey})
	if err != nil {
		b.Fatal(err)
	}
	var reg providers.Registry
	if err := reg.Register(a); err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h, err := receiver.New(receiver.Config{
		Providers: &reg, Store: newMemStore(), Forwarder: instantForwarder{}, MaxBodyBytes: 1 << 20, Logger: logger,
	})
	if err != nil {
		b.Fatal(err)
	}
	// Ten events per op, signed before the clock starts.
	const events = 10
	var bodies [][]byte
	for op := range b.N {
		items := make([]string, events)
		for i := range items {
			items[i] = adyenBenchItem(op*events + i)
		}
		if batch {
			bodies = append(bodies, []byte(`{"live":"false","notificationItems":[`+strings.Join(items, ",")+`]}`))
			continue
		}
		for _, it := range items {
			bodies = append(bodies, []byte(`{"live":"false","notificationItems":[`+it+`]}`))
		}
	}
	for i, body := range bodies {
		signed, err := a.Sign(body)
		if err != nil {
			b.Fatal(err)
		}
		bodies[i] = signed.Body
	}
	req := httptest.NewRequest(http.MethodPost, "/webhooks/adyen", nil)
	req.Header.Set("Content-Type", "application/json")
	var body bytes.Reader
	w := &benchWriter{header: http.Header{}}
	send := func(i int) {
		body.Reset(bodies[i])
		req.Body = io.NopCloser(&body)
		req.ContentLength = int64(len(bodies[i]))
		clear(w.header)
		w.status = 0
		w.body.Reset()
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.body.String() != adyen.Accepted {
			b.Fatalf("request %d answered %d: %s", i, w.status, w.body.String())
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, ok := processCPU()
	for i := range bodies {
		send(i)
	}
	if cpu1, ok1 := processCPU(); ok && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}
