package midtrans_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/providertest"
)

func mustRaw(body []byte) *rawjson.Object {
	o, err := rawjson.Parse(body)
	if err != nil {
		panic(err)
	}
	return o
}

// seeds are the fixtures plus hand-picked edge cases.
func seeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "null", "[]", "{}", `{"signature_key":null}`,
		string(note(q("1111"), q("200"), q("100000.00"), q(docsSig))),
		string(note(q("1111"), "200", "100000.00", q(docsSig))),
		string(note(q("11112"), q("001"), q("00000.00"), q(docsSig))),
		`{"order_id":"1","status_code":"200","gross_amount":"1","signature_key":"` + docsSig + `","signature_key":""}`,
		`{"transaction_id":"t","transaction_status":"s","fraud_status":"f","refund_key":"r"}`,
		`{"transaction_id":"t\u0000","transaction_status":1}`,
		// Names a case-insensitive decoder takes for one.
		`{"transaction_id":"t","transaction_status":"deny","Transaction_Status":"settlement","Fraud_Status":"accept"}`,
		`{"transaction_id":"t","transaction_status":"deny","TRANSACTION_STATUS":"settlement"}`,
		`{"transaction_id":"t","transaction_status":"deny","tranſaction_ſtatus":"settlement"}`,
		`{"transaction_id":"t","transaction_status":"refund","refund_key":"r","refund_amount":"1","Refund_Amount":"9"}`,
		`{"transaction_id":"t","transaction_status":"refund","refund_key":"r","REFUND_AMOUNT":"9"}`,
		// refund_key with a colon (digested) and a fraud status.
		`{"transaction_id":"t","transaction_status":"refund","fraud_status":"accept","refund_key":"R1"}`,
		`{"transaction_id":"t","transaction_status":"refund","refund_key":"accept:R1"}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzVerify checks that no body makes Verify panic, that every rejection
// wraps providers.ErrUnauthorized, and that an accepted body really carries
// the signature of its fields.
func FuzzVerify(f *testing.F) {
	seeds(f)
	a, err := midtrans.New(testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := a.Verify(context.Background(), providers.Delivery{Body: body})
		if err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) {
				t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
			}
			return
		}
		// An accepted body has the fields Sign needs, and already carries
		// the signature Sign computes (perhaps spelled with JSON escapes).
		signed, err := a.Sign(body)
		out := signed.Body
		if err != nil || a.Verify(context.Background(), providers.Delivery{Body: out}) != nil {
			t.Fatalf("Verify accepted %q, but Sign gives %q (%v)", body, out, err)
		}
		if o, _ := rawjson.Parse(out); o != nil {
			sent, _, _ := mustRaw(body).String(midtrans.SignatureField)
			signed, _, _ := o.String(midtrans.SignatureField)
			if sent != signed {
				t.Fatalf("Verify accepted %q with a signature other than Sign's", body)
			}
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no body makes Parse panic, that every rejection wraps
// providers.ErrMalformed, and that an accepted body yields a usable event.
func FuzzParse(f *testing.F) {
	seeds(f)
	a, err := midtrans.New(testKey)
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
		if !providers.IsToken(ev.Key, 4*midtrans.MaxFieldBytes+3) || !providers.IsToken(ev.Type, midtrans.MaxFieldBytes) || !hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted %q with event %+v", body, ev)
		}
	})
}

// FuzzSign checks that whatever Sign accepts then verifies, keeps its event,
// and is signed again to the same bytes.
func FuzzSign(f *testing.F) {
	seeds(f)
	a, err := midtrans.New(testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		signed, err := a.Sign(body)
		out := signed.Body
		if err != nil {
			return
		}
		if err := a.Verify(context.Background(), providers.Delivery{Body: out}); err != nil {
			t.Fatalf("Sign(%q) = %q does not verify: %v", body, out, err)
		}
		again, err := a.Sign(out)
		if err != nil || !bytes.Equal(again.Body, out) {
			t.Fatalf("Sign is not idempotent on %q", body)
		}
		before, errBefore := providertest.OneEvent(a.Parse(providers.Delivery{Body: body}))
		after, errAfter := providertest.OneEvent(a.Parse(providers.Delivery{Body: out}))
		if (errBefore == nil) != (errAfter == nil) || before != after {
			t.Fatalf("Sign changed the event of %q: %+v %v -> %+v %v", body, before, errBefore, after, errAfter)
		}
	})
}
