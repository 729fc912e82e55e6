package duitku_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/providertest"
)

// FuzzVerify checks that no body makes Verify panic, that every rejection
// wraps providers.ErrUnauthorized or (a body that is not a form, or gives a
// field twice) providers.ErrMalformed, and that Sign of an accepted body
// verifies too.
func FuzzVerify(f *testing.F) {
	for _, name := range fixtureNames(f) {
		f.Add(readFixture(f, name))
	}
	for _, s := range []string{vecBody, "", "&", "=", "a=%", "signature", vecBody + "&amount=1", "merchantCode=D0001&amount=10000&merchantOrderId=12345&signature"} {
		f.Add([]byte(s))
	}
	a := newAdapter(f, vecMerchant, vecKey)
	f.Fuzz(func(t *testing.T, body []byte) {
		err := a.Verify(context.Background(), providers.Delivery{Body: body})
		if err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) && !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Verify error %v wraps neither ErrUnauthorized nor ErrMalformed", err)
			}
			return
		}
		sd, err := a.Sign(body)
		signed := sd.Body
		if err != nil {
			t.Fatalf("Verify accepted %q, which Sign refuses: %v", body, err)
		}
		if err := a.Verify(context.Background(), providers.Delivery{Body: signed}); err != nil {
			t.Fatalf("Verify accepted %q but not its Sign %q: %v", body, signed, err)
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
	for _, s := range []string{vecBody, "", "merchantOrderId=a&reference=b&resultCode=c", "merchantOrderId=a%3Ab&reference=b&resultCode=c&resultCode=d"} {
		f.Add([]byte(s))
	}
	a := newAdapter(f, vecMerchant, vecKey)
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		if !providers.IsToken(ev.Key, 3*duitku.MaxFieldBytes+2) || !providers.IsToken(ev.Type, duitku.MaxFieldBytes) || !hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
	})
}
