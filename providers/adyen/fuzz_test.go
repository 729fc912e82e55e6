package adyen_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
)

func seeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "null", "{}", `{"live":"false","notificationItems":[]}`,
		string(notification(vecItem(vecSignature))), string(notification(vecItem(vecSignature), vecItem(""))),
		`{"live":"false","notificationItems":[{"NotificationRequestItem":{"amount":{"value":-0}}}]}`,
		`{"live":"false","notificationItems":[{"NotificationRequestItem":{"pspReference":"a","PSPReference":"b"}}]}`} {
		f.Add([]byte(s))
	}
}

// FuzzVerify checks that no body makes Verify panic, that every rejection
// wraps providers.ErrUnauthorized, and that an accepted body has items that
// each carry the signature of their signed fields under the key.
func FuzzVerify(f *testing.F) {
	seeds(f)
	a := newAdapter(f, vecKey)
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := a.Verify(context.Background(), providers.Delivery{Body: body}); err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) {
				t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
			}
			return
		}
		// Accepted: signing it again with the key changes nothing.
		sd, err := a.Sign(body)
		signed := sd.Body
		if err != nil {
			t.Fatalf("Sign of a verified body: %v", err)
		}
		if err := a.Verify(context.Background(), providers.Delivery{Body: signed}); err != nil {
			t.Fatalf("re-signed verified body refused: %v", err)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection
// wraps providers.ErrMalformed, and that every item is a usable event whose
// forwarded body parses into that item alone.
func FuzzParse(f *testing.F) {
	seeds(f)
	a := newAdapter(f, vecKey)
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := a.Parse(providers.Delivery{Body: body})
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		for _, it := range items {
			if !providers.IsToken(it.Event.Key, 3*adyen.MaxFieldBytes+9) || !providers.IsToken(it.Event.Type, adyen.MaxFieldBytes) ||
				!hex64.MatchString(it.Event.Fingerprint) {
				t.Fatalf("Parse accepted %q with event %+v", body, it.Event)
			}
			one, err := a.Parse(providers.Delivery{Body: it.Body})
			if err != nil || len(one) != 1 || one[0].Event != it.Event {
				t.Fatalf("item body %q does not parse into its item: %v", it.Body, err)
			}
		}
	})
}
