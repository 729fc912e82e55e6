package receiver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/receiver"
)

// BenchmarkStatusCheck measures what Duitku's status check (on by default)
// costs a delivery, with it off and on side by side: the handler with an
// in-memory store and a core that answers at once, and the status API a
// stand-in over loopback that answers at once, so the figure is webhookd's
// own share (a request built and signed, a round trip, the answer read and
// compared); Duitku's real API adds its network latency to each new event.
//
//	go test ./receiver -run '^$' -bench StatusCheck -count 6
//
// status-calls/op is 1 for a new event and 0 for a duplicate: a retry of a
// finished event is answered from the store before Confirm runs.
func BenchmarkStatusCheck(b *testing.B) {
	for _, kind := range []string{"new", "duplicate"} {
		for _, check := range []string{"off", "on"} {
			b.Run(fmt.Sprintf("event=%s/check=%s", kind, check), func(b *testing.B) {
				benchStatusCheck(b, kind == "duplicate", check == "on")
			})
		}
	}
}

func benchStatusCheck(b *testing.B, duplicate, check bool) {
	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct{ MerchantOrderID string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"merchantOrderId":%q,"reference":"REF-%s","amount":"10000","statusCode":"00","statusMessage":"SUCCESS"}`,
			req.MerchantOrderID, req.MerchantOrderID)
	}))
	defer api.Close()
	var opts []duitku.Option
	if check {
		opts = append(opts, duitku.WithStatusCheck(api.URL))
	}
	dk, err := duitku.New(duitkuMerchant, []string{duitkuKey}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	var reg providers.Registry
	if err := reg.Register(dk); err != nil {
		b.Fatal(err)
	}
	h, err := receiver.New(receiver.Config{Providers: &reg, Store: newMemStore(), Forwarder: instantForwarder{}, MaxBodyBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	n := b.N
	if duplicate {
		n = 1
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		order := fmt.Sprintf("ORD-%d", i)
		bodies[i] = duitkuCallback(order, "10000", "REF-"+order, "00", duitkuKey)
	}
	req := httptest.NewRequest(http.MethodPost, "/webhooks/duitku", nil)
	req.Header.Set("Content-Type", duitku.ContentType)
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
		if w.status != http.StatusCreated {
			b.Fatalf("delivery %d answered %d: %s", i, w.status, w.body.String())
		}
	}
	if duplicate {
		send(0)
	}
	calls.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if duplicate {
			send(0)
		} else {
			send(i)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(calls.Load())/float64(b.N), "status-calls/op")
}
