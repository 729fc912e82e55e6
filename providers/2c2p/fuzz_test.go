package twoctwop_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhookd/webhookd/providers"
	twoctwop "github.com/webhookd/webhookd/providers/2c2p"
)

// FuzzVerify: any body is verified without panicking and refused with an
// error of the two classes; one that verifies parses into a usable event
// or a 400.
func FuzzVerify(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(body(guideToken))
	a, err := twoctwop.New([]string{guideKey})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := providers.Delivery{Body: b}
		if err := a.Verify(context.Background(), d); err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) && !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Verify: %v wraps neither class", err)
			}
			return
		}
		checkParse(t, a, d)
	})
}

// FuzzClaims signs any header and claims text, so that the parsers see
// what only a key holder could send.
func FuzzClaims(f *testing.F) {
	f.Add(hs256, `{"invoiceNo":"A","respCode":"0000","tranRef":"1"}`)
	f.Add(`{"alg":"none"}`, `{"invoiceNo":"A:B","respCode":"0000"}`)
	f.Add(hs256, `{"invoiceNo":1e3,"respCode":"0000","invoiceno":"x"}`)
	a, err := twoctwop.New([]string{"k"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header, claims string) {
		d := providers.Delivery{Body: body(jws("k", header, claims))}
		if a.Verify(context.Background(), d) != nil {
			return
		}
		checkParse(t, a, d)
	})
}

func checkParse(t *testing.T, a *twoctwop.Adapter, d providers.Delivery) {
	t.Helper()
	items, err := a.Parse(d)
	if err != nil {
		if !errors.Is(err, providers.ErrMalformed) {
			t.Fatalf("Parse of a verified body: %v is not ErrMalformed", err)
		}
		return
	}
	ev := items[0].Event
	parts := strings.Split(ev.Key, ":")
	if len(items) != 1 || len(parts) < 2 || len(parts) > 3 || parts[1] != ev.Type || !providers.IsToken(ev.Key, 400) {
		t.Fatalf("%d items, key %q type %q", len(items), ev.Key, ev.Type)
	}
}
