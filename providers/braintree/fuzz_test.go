package braintree_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/braintree"
)

// FuzzVerify: any body is verified without panicking, refused with an
// error of the two classes, and a body that verifies parses into a usable
// event or a 400.
func FuzzVerify(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(form(selfSignature, selfPayload))
	f.Add(form(sdkAnswer, sdkChallenge))
	a, err := braintree.New([]string{sdkKeys})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d := providers.Delivery{Body: body}
		if err := a.Verify(context.Background(), d); err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) && !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Verify: %v wraps neither class", err)
			}
			return
		}
		checkParse(t, a, d)
	})
}

// FuzzParse signs any payload text, so that the XML reader sees what only
// a key holder could send: it never panics, and whatever it keys is kind
// + ":" + the digest.
func FuzzParse(f *testing.F) {
	f.Add(selfPayload)
	f.Add(mime(`<notification><kind>check</kind></notification>`))
	f.Add(mime(`<!DOCTYPE x><notification><kind>a:b</kind></notification>`))
	a, err := braintree.New([]string{sdkKeys})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		d := providers.Delivery{Body: form(sdkPublic+"|"+braintree.Signature(sdkPrivate, []byte(payload)), payload)}
		if a.Verify(context.Background(), d) != nil {
			return
		}
		checkParse(t, a, d)
	})
}

func checkParse(t *testing.T, a *braintree.Adapter, d providers.Delivery) {
	t.Helper()
	items, err := a.Parse(d)
	if err != nil {
		if !errors.Is(err, providers.ErrMalformed) {
			t.Fatalf("Parse of a verified body: %v is not ErrMalformed", err)
		}
		return
	}
	if len(items) != 1 {
		t.Fatalf("%d items", len(items))
	}
	ev := items[0].Event
	kind, digest, ok := strings.Cut(ev.Key, ":")
	if !ok || kind != ev.Type || digest != ev.Fingerprint || len(digest) != 64 || strings.Contains(digest, ":") {
		t.Fatalf("key %q type %q fingerprint %q", ev.Key, ev.Type, ev.Fingerprint)
	}
	if !providers.IsToken(ev.Key, 400) {
		t.Fatalf("key %q is not a token", ev.Key)
	}
}
