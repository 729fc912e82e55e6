package spec_test

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
	"github.com/webhookd/webhookd/providers/spec"
)

// FuzzReplacedVerify feeds signature headers and bodies to the built-in
// Stripe and Paddle specs (the first byte of the input picks one): no
// header or body makes Verify panic, and every refusal wraps
// providers.ErrUnauthorized.
func FuzzReplacedVerify(f *testing.F) {
	for _, h := range []string{vecStripeHeader, vecStripeRotation, "t=1700000000,v1=" + vecStripeV1Rolled,
		"t=1700000000,v0=" + vecStripeV1, "t=1700000000, v1=" + vecStripeV1, "v1=" + vecStripeV1, "t=x,v1=zz,=,,",
		"t=-9223372036854775808,v1=00", "t=9223372036854775807,v1=" + vecStripeV1, ""} {
		f.Add(false, h, []byte(vecStripeBody))
	}
	for _, h := range []string{vecPaddleGoHeader, vecPaddleNodeMultiHeader, vecPaddlePyHeader, "ts=;h1=", "h1=x;ts=99999999999999999999", ";;=;"} {
		f.Add(true, h, []byte(vecPaddleGoBody))
	}
	stripe, err := spec.NewBuiltin("stripe", []string{vecStripeSecret, vecStripeSecretRolled}, nil,
		func() time.Time { return time.Unix(vecStripeT+60, 0) })
	if err != nil {
		f.Fatal(err)
	}
	paddle, err := spec.NewBuiltin("paddle", []string{vecPaddlePySecretGood, vecPaddleGoSecret}, nil,
		func() time.Time { return time.Unix(vecPaddleGoTS+60, 0) })
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, usePaddle bool, header string, body []byte) {
		p, name := stripe, "Stripe-Signature"
		if usePaddle {
			p, name = paddle, "Paddle-Signature"
		}
		err := p.Verify(context.Background(), providers.Delivery{Header: http.Header{name: {header}}, Body: body})
		if err != nil && !errors.Is(err, providers.ErrUnauthorized) {
			t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzReplacedParse feeds bodies to the built-in Stripe spec: no body
// makes Parse panic, every refusal wraps providers.ErrMalformed, and an
// accepted body yields a usable event whose fingerprint is the one the
// Stripe adapter stored (legacyStripeFingerprint), so no record stored
// before the spec took over stops matching its retries.
func FuzzReplacedParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "stripe", "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{vecStripeBody, "", "null", "[]", `{"id":1}`, `{"id":"evt_1","type":null,"data":{"a":[1,2]}}`,
		`{"id":"evt_1","id":"evt_2"}`, `{"id":"evt_1","data":{"a":1,"a":2}, "created" : 1e3}`,
		// Names a case-insensitive decoder takes for one, at any depth.
		`{"id":"evt_1","type":"charge.refunded","Type":"charge.succeeded"}`, `{"id":"evt_1","TYPE":"charge.succeeded"}`,
		`{"id":"evt_1","data":{"object":{"status":"failed","ſtatus":"succeeded"}}}`,
		`{"id":"evt_1","data":{"object":{"kind":"a","\u212aind":"b"}}}`} {
		f.Add([]byte(s))
	}
	p, err := spec.NewBuiltin("stripe", []string{vecStripeSecret}, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := providertest.OneEvent(p.Parse(providers.Delivery{Body: body}))
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		if ev.Key == "" || !hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
		if want := legacyStripeFingerprint(t, body); ev.Fingerprint != want {
			t.Fatalf("Parse(%q) fingerprint %s, the adapter's %s", body, ev.Fingerprint, want)
		}
	})
}
