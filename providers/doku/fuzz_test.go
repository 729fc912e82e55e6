package doku_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/doku"
	"github.com/webhookd/webhookd/providers/providertest"
)

// FuzzVerify checks that no headers or body make Verify panic, and that
// every rejection wraps providers.ErrUnauthorized.
func FuzzVerify(f *testing.F) {
	f.Add(vecClientID, vecRequestID, vecTimestamp, vecSignature, []byte(vecBody))
	f.Add(vecClientID, vecRequestID, vecTimestamp, "HMACSHA256=", []byte(vecBody))
	f.Add(vecClientID, vecRequestID+"\n", "2020-08-11T08:45:42+07:00", "HMACSHA256=====", []byte{})
	f.Add("", "", "", "", []byte(nil))
	f.Add(vecClientID, "x", "9999-12-31T23:59:59Z", "HMACSHA256=AAAA", []byte("{}"))
	a := newAdapter(f, vecTime)
	f.Fuzz(func(t *testing.T, clientID, requestID, timestamp, sig string, body []byte) {
		h := http.Header{}
		h.Set(doku.HeaderClientID, clientID)
		h.Set(doku.HeaderRequestID, requestID)
		h.Set(doku.HeaderTimestamp, timestamp)
		h.Set(doku.HeaderSignature, sig)
		err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
		if err != nil && !errors.Is(err, providers.ErrUnauthorized) {
			t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection wraps
// providers.ErrMalformed, and that an accepted body yields a usable event.
func FuzzParse(f *testing.F) {
	for _, name := range fixtureNames(f) {
		f.Add(readFixture(f, name))
	}
	for _, s := range []string{vecBody, "", "null", "[]", `{"order":1}`, `{"order":{"invoice_number":"a"},"service":{"id":"b"},"transaction":{"status":"c"}}`,
		`{"order":{"invoice_number":"a","Invoice_Number":"b"}}`} {
		f.Add([]byte(s))
	}
	a := newAdapter(f, vecTime)
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		if !providers.IsToken(ev.Key, 3*doku.MaxFieldBytes+2) || !providers.IsToken(ev.Type, 2*doku.MaxFieldBytes+1) || !hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
	})
}
