package xendit_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/xendit"
)

// FuzzVerify checks that no header makes Verify panic, that every rejection
// wraps providers.ErrUnauthorized, and that only a configured token passes.
func FuzzVerify(f *testing.F) {
	for _, s := range []string{token, tokenNew, "", " ", token + " ", token[:len(token)-1], "\x00", "a,b"} {
		f.Add(s)
	}
	a := newAdapter(f, token, tokenNew)
	f.Fuzz(func(t *testing.T, value string) {
		err := a.Verify(context.Background(), providers.Delivery{Header: http.Header{xendit.HeaderName: {value}}, Body: nil})
		switch {
		case err == nil && value != token && value != tokenNew:
			t.Fatalf("Verify accepted %q", value)
		case err != nil && (value == token || value == tokenNew):
			t.Fatalf("Verify refused a configured token: %v", err)
		case err != nil && !errors.Is(err, providers.ErrUnauthorized):
			t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection wraps
// providers.ErrMalformed, and that an accepted body yields a usable event.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "null", "{}", `{"event":"e","data":{"payment_id":"p","capture_id":"c"}}`,
		`{"event":"e","data":{"id":null,"payment_id":""}}`, `{"id":"i","status":"S"}`, `{"status":"S"}`,
		`{"payment_id":"p","id":"i"}`, `{"event":1}`, `{"event":"e","data":[]}`, `{"id":"a:b"}`,
		// Names a case-insensitive decoder takes for one.
		`{"id":"i","status":"EXPIRED","Status":"PAID"}`, `{"id":"i","status":"EXPIRED","STATUS":"PAID"}`,
		`{"id":"i","status":"EXPIRED","ſtatus":"PAID"}`, `{"id":"i","STATUS":"PAID"}`,
		`{"event":"a.b","data":{"id":"d","ID":"e"}}`, `{"event":"a.b","data":{"id":"d","metadata":{"k":1,"\u212a":2}}}`,
		// Shapes whose keys the contract's formats would let collide.
		`{"id":"payment.succeeded","status":"py-1"}`, `{"event":"inv-1","data":{"id":"PAID"}}`,
	} {
		f.Add([]byte(s))
	}
	a := newAdapter(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		if !providers.IsToken(ev.Key, 3*xendit.MaxFieldBytes+2) || (ev.Type != "" && !providers.IsToken(ev.Type, xendit.MaxFieldBytes)) ||
			!hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
	})
}
