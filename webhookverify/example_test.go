package webhookverify_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/webhookd/webhookd/webhookverify"
)

// A core service's handler checks that each request comes from webhookd.
// The signature covers the raw body, so the handler reads it first and
// parses it only after Verify has passed.
func Example() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // WEBHOOKD_DOWNSTREAM_SECRET

	core := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := webhookverify.Verify(secret, r.Header, body, webhookverify.DefaultTolerance); err != nil {
			http.Error(w, "not from webhookd", http.StatusUnauthorized)
			return
		}
		// Dedupe on Idempotency-Key, then act on the event.
		fmt.Fprintf(w, "accepted %s", r.Header.Get("Idempotency-Key"))
	})

	// What webhookd sends: the signature covers the id, the timestamp and
	// the body (the Signer is the one webhookd uses).
	signer, err := webhookverify.NewSigner(secret)
	if err != nil {
		panic(err)
	}
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded"}`)
	header := http.Header{}
	header.Set("Idempotency-Key", "stripe:evt_1")
	signer.Sign(header, "stripe:evt_1", time.Now(), body)

	deliver := func(body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/payments/webhooks", bytes.NewReader(body))
		req.Header = header.Clone()
		rec := httptest.NewRecorder()
		core.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body.String())
	}
	deliver(body)
	// One byte changed on the way: refused.
	deliver(bytes.Replace(body, []byte("evt_1"), []byte("evt_2"), 1))
	// Output:
	// 200 accepted stripe:evt_1
	// 401 not from webhookd
}
