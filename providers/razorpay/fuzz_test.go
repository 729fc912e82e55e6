package razorpay_test

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
	"github.com/webhookd/webhookd/providers/razorpay"
)

// FuzzVerify checks that no header or body makes Verify panic, that every
// rejection wraps providers.ErrUnauthorized, and that only the true
// signature of the body under a configured secret passes.
func FuzzVerify(f *testing.F) {
	f.Add(vecSignature, []byte(vecBody))
	f.Add(razorpay.SignatureHeader(secretB, []byte(vecBody)), []byte(vecBody))
	f.Add("", []byte(nil))
	f.Add("zz", []byte("{}"))
	f.Add(vecSignature[:63], []byte(vecBody))
	a := newAdapter(f, vecSecret, secretB)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		err := a.Verify(context.Background(), providers.Delivery{Header: http.Header{razorpay.HeaderName: {sig}}, Body: body})
		if err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) {
				t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
			}
			return
		}
		if !equalFold(sig, razorpay.SignatureHeader(vecSecret, body)) && !equalFold(sig, razorpay.SignatureHeader(secretB, body)) {
			t.Fatalf("Verify accepted %q for %q", sig, body)
		}
	})
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection
// wraps providers.ErrMalformed, and that an accepted body yields a usable
// event.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{vecBody, "", "null", "{}", `{"event":"a","contains":["x"],"payload":{"x":{"entity":{"id":"i"}}},"created_at":1}`,
		`{"event":"a","contains":[],"payload":{},"created_at":1}`, `{"event":"a","contains":["x"],"payload":{"x":{"entity":{"id":"i","ID":"j"}}},"created_at":1}`,
		`{"event":"a","contains":["x"],"payload":{"x":{"entity":{"id":"i"}}},"created_at":-1e9}`} {
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
		if !providers.IsToken(ev.Key, 3*razorpay.MaxFieldBytes+2) || !providers.IsToken(ev.Type, razorpay.MaxFieldBytes) ||
			!hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
	})
}
