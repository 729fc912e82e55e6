package stripe_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/stripe"
)

// FuzzVerify checks that no header or body makes Verify panic, and that every
// rejection wraps providers.ErrUnauthorized.
func FuzzVerify(f *testing.F) {
	f.Add(vecHeader, []byte(vecBody))
	f.Add(vecRotationHeader, []byte(vecBody))
	f.Add("t=1700000000,v1="+vecV1Rolled, []byte(vecBody))
	f.Add("t=1700000000,v0="+vecV1, []byte(vecBody))
	f.Add(vecHeader, []byte(`{"id":"evt_test_webhook", "object":"event"}`))
	f.Add("t=1700000000, v1="+vecV1, []byte(vecBody))
	f.Add("v1="+vecV1, []byte(vecBody))
	f.Add("t=x,v1=zz,=,,", []byte{})
	f.Add("t=-9223372036854775808,v1=00", []byte{0})
	f.Add("t=9223372036854775807,v1="+vecV1, []byte(vecBody))
	f.Add("", []byte(nil))

	a, err := stripe.New([]string{vecSecret, vecSecretRolled}, tolerance,
		stripe.WithClock(func() time.Time { return vecNow }))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := a.Verify(context.Background(), providers.Delivery{Header: http.Header{stripe.HeaderName: {header}}, Body: body})
		if err != nil && !errors.Is(err, providers.ErrUnauthorized) {
			t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection wraps
// providers.ErrMalformed, and that an accepted body yields a usable event
// whose fingerprint is the one Parse computed before it read bodies with
// rawjson.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	paths = append(paths, docsExample)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{vecBody, "", "null", "[]", `{"id":1}`, `{"id":"evt_1","type":null,"data":{"a":[1,2]}}`,
		`{"id":"evt_1","id":"evt_2"}`, `{"id":"evt_1","data":{"a":1,"a":2}, "created" : 1e3}`,
		// Names a case-insensitive decoder takes for one, at any depth.
		`{"id":"evt_1","type":"charge.refunded","Type":"charge.succeeded"}`, `{"id":"evt_1","TYPE":"charge.succeeded"}`,
		`{"id":"evt_1","data":{"object":{"status":"failed","ſtatus":"succeeded"}}}`,
		`{"id":"evt_1","data":{"object":{"kind":"a","\u212aind":"b"}}}`} {
		f.Add([]byte(s))
	}

	a, err := stripe.New([]string{vecSecret}, tolerance)
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
		if ev.Key == "" || !hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
		if want := legacyFingerprint(t, body); ev.Fingerprint != want {
			t.Fatalf("Parse(%q) fingerprint %s, before rawjson %s", body, ev.Fingerprint, want)
		}
	})
}
