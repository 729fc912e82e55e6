package paypal_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/paypal/paypaltest"
	"github.com/webhookd/webhookd/providers/providertest"
)

// FuzzVerify checks that no headers or body make Verify panic, and
// that every rejection wraps providers.ErrUnauthorized or, for a failed
// certificate fetch only, providers.ErrUnavailable. The certificate comes
// from the fake PayPal, so the signature check itself is reached.
func FuzzVerify(f *testing.F) {
	srv := paypaltest.NewServer(f)
	body := readFixture(f, "payment_capture_completed.json")
	h := srv.Sign(paypaltest.Good, webhookID, "tx-1", time.Now(), body)
	f.Add(h.Get(paypal.HeaderTransmissionID), h.Get(paypal.HeaderTransmissionTime), h.Get(paypal.HeaderTransmissionSig), h.Get(paypal.HeaderCertURL), paypal.AuthAlgo, body)
	f.Add("", "", "", "", "", []byte(nil))
	f.Add("a|b", "t", "AAAA", "https://api.paypal.com:0/", "SHA256withRSA", []byte("{}"))
	f.Add("id", "t", "AAAA", srv.CertURL(paypaltest.Foreign), "SHA256withRSA", []byte("{}"))
	a, err := paypal.New([]string{webhookID}, srv.Options()...)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, ts, sig, certURL, algo string, body []byte) {
		h := http.Header{}
		h.Set(paypal.HeaderTransmissionID, id)
		h.Set(paypal.HeaderTransmissionTime, ts)
		h.Set(paypal.HeaderTransmissionSig, sig)
		h.Set(paypal.HeaderCertURL, certURL)
		h.Set(paypal.HeaderAuthAlgo, algo)
		err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
		switch {
		case err == nil, errors.Is(err, providers.ErrUnauthorized):
		case errors.Is(err, paypal.ErrCertUnavailable):
		default:
			t.Fatalf("Verify error %v is neither 401 nor a fetch failure", err)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection
// wraps providers.ErrMalformed, and that an accepted body yields a usable
// event.
func FuzzParse(f *testing.F) {
	for _, name := range fixtureNames(f) {
		f.Add(readFixture(f, name))
	}
	for _, s := range []string{"", "null", "[]", `{"id":"WH-1","event_type":"X"}`, `{"id":"WH-1","Id":"x","event_type":"X"}`} {
		f.Add([]byte(s))
	}
	a, err := paypal.New([]string{webhookID})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		if !providers.IsToken(ev.Key, paypal.MaxFieldBytes) || !providers.IsToken(ev.Type, paypal.MaxFieldBytes) || !hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
	})
}
