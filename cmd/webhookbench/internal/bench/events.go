package bench

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webhookd/webhookd/providers/spec"
)

// benchSecret is the Stripe signing secret every target is started with.
const benchSecret = "whsec_webhookbench_signing_secret"

// webhookPath is where every target takes Stripe deliveries.
const webhookPath = "/webhooks/stripe"

// event is one unique Stripe event and its pre-signed delivery.
type event struct {
	id   string
	body []byte
	// sig is a Stripe-Signature over body, made when the event was built.
	// Stripe's tolerance is five minutes, and a run sends every copy of an
	// event within seconds of building it, so one signature serves all
	// copies and the client spends no HMAC in the timed loop.
	sig string
	// sign makes sig; every event of a run shares one.
	sign *signer

	sent atomic.Int32 // deliveries answered (any status, errors included)
	ok   atomic.Int32 // deliveries answered 2xx
}

// resign refreshes the signature's timestamp, for resends that may come
// long after the event was built.
func (e *event) resign(now time.Time) {
	e.sig = e.sign.header(now, e.body)
}

// signer signs events with the provider webhookd serves for Stripe (the
// built-in spec), at the time each caller gives: one per run, built once
// so that the feeder spends one HMAC per event.
type signer struct {
	p  *spec.Provider
	mu sync.Mutex
	at time.Time // the clock of p while mu is held
}

// newSigner returns the run's signer. The built-in spec is the binary's
// own and its tests build it: failing here is a broken build, not a run's
// mistake, so it panics as webhookd's provider table does.
func newSigner() *signer {
	s := &signer{}
	p, err := spec.NewBuiltin("stripe", []string{benchSecret}, nil, func() time.Time { return s.at })
	if err != nil {
		panic(fmt.Sprintf("built-in stripe spec: %v", err))
	}
	s.p = p
	return s
}

// header is the Stripe-Signature of body signed at now.
func (s *signer) header(now time.Time, body []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = now
	d, err := s.p.Sign(body)
	if err != nil {
		// An HMAC spec with its secret signs every body.
		panic(fmt.Sprintf("built-in stripe spec: %v", err))
	}
	return d.Header.Get("Stripe-Signature")
}

// header is the delivery's request header, as Stripe sends it.
func (e *event) header() http.Header {
	return http.Header{
		"Content-Type":     {"application/json; charset=utf-8"},
		"User-Agent":       {"Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
		"Stripe-Signature": {e.sig},
	}
}

// newRunID returns a short random prefix that keeps one run's event ids
// apart from every other's, so stores that outlive a run never replay.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newEvent builds the n-th event of a run: a payment_intent.succeeded
// event of about 1.5 KiB, shaped as Stripe sends it (API version
// 2025-06-30.basil), with its own event, intent and charge ids and amount.
func newEvent(id string, n int, now time.Time, sign *signer) *event {
	amount := 1000 + n%9000
	body := fmt.Appendf(make([]byte, 0, 1700), stripeTemplate,
		id, now.Unix(), // id, created
		n, amount, amount, n, // object id, amount, amount received, charge id
		now.Unix()-2, n, n, // object created, metadata order_id, payment method
	)
	e := &event{id: id, body: body, sign: sign}
	e.resign(now)
	return e
}

// eventIDOf extracts the event id from a body newEvent built: the first
// "id" member. The stub uses it to tell events apart without trusting any
// header the system under test sets.
func eventIDOf(body []byte) string {
	const marker = `"id": "`
	i := bytes.Index(body, []byte(marker))
	if i < 0 {
		return ""
	}
	rest := body[i+len(marker):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// eventID names the i-th event of block b of run run.
func eventID(run string, b, i int) string {
	return "evt_bench" + run + "b" + strconv.Itoa(b) + "n" + strconv.Itoa(i)
}

// stripeTemplate is a payment_intent.succeeded event as Stripe's API
// returns it; the verbs are filled by newEvent. "id" comes first, which
// eventIDOf relies on.
const stripeTemplate = `{
  "id": "%s",
  "object": "event",
  "api_version": "2025-06-30.basil",
  "created": %d,
  "data": {
    "object": {
      "id": "pi_3Bench%08d",
      "object": "payment_intent",
      "amount": %d,
      "amount_capturable": 0,
      "amount_details": {"tip": {}},
      "amount_received": %d,
      "application": null,
      "application_fee_amount": null,
      "automatic_payment_methods": {"allow_redirects": "always", "enabled": true},
      "canceled_at": null,
      "cancellation_reason": null,
      "capture_method": "automatic_async",
      "charges": {"object": "list", "data": [], "has_more": false, "total_count": 1, "url": "/v1/charges?payment_intent=pi_3Bench"},
      "client_secret": "pi_3Bench_secret_redacted",
      "confirmation_method": "automatic",
      "latest_charge": "ch_3Bench%08d",
      "created": %d,
      "currency": "usd",
      "customer": null,
      "description": "Subscription update",
      "last_payment_error": null,
      "livemode": false,
      "metadata": {"order_id": "ORDER-%d"},
      "next_action": null,
      "on_behalf_of": null,
      "payment_method": "pm_1BenchCard%08d",
      "payment_method_configuration_details": {"id": "pmc_1BenchConfig", "parent": null},
      "payment_method_options": {"card": {"installments": null, "mandate_options": null, "network": null, "request_three_d_secure": "automatic"}},
      "payment_method_types": ["card", "link"],
      "processing": null,
      "receipt_email": "jenny.rosen@example.com",
      "review": null,
      "setup_future_usage": null,
      "shipping": null,
      "source": null,
      "statement_descriptor": null,
      "statement_descriptor_suffix": null,
      "status": "succeeded",
      "transfer_data": null,
      "transfer_group": null
    }
  },
  "livemode": false,
  "pending_webhooks": 1,
  "request": {"id": "req_BenchRequest0001", "idempotency_key": "5f1e0b5c-8a4e-4b7e-9d7e-bench00000001"},
  "type": "payment_intent.succeeded"
}
`

// schedule lays out one block of deliveries: u unique events, each sent d
// times. dup says how copies meet: "conc" puts an event's copies next to
// each other, so that different clients send them at about the same time;
// "seq" sends every event once, then every event again, so copies arrive
// one after another; "mix" does conc for even events and seq for odd ones.
func schedule(events []*event, d int, dup string) []*event {
	out := make([]*event, 0, len(events)*d)
	conc := func(i int) bool { return dup == "conc" || (dup == "mix" && i%2 == 0) }
	for i, e := range events {
		if conc(i) {
			for range d {
				out = append(out, e)
			}
		} else {
			out = append(out, e)
		}
	}
	for range d - 1 {
		for i, e := range events {
			if !conc(i) {
				out = append(out, e)
			}
		}
	}
	return out
}

// validDup reports whether s is a schedule mode.
func validDup(s string) bool { return s == "seq" || s == "conc" || s == "mix" }
