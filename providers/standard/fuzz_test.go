package standard_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/standard"
	"github.com/webhookd/webhookd/signature"
)

// FuzzVerify checks that no headers or body make Verify panic, that every
// rejection wraps providers.ErrUnauthorized, and that an accepted delivery
// carries the true signature of its own id, timestamp and body.
func FuzzVerify(f *testing.F) {
	f.Add(vecID, vecTS, vecSig, "", []byte(vecBody))
	f.Add("", "", "", vecSig, []byte(vecBody))
	f.Add(vecID, "0"+vecTS, vecSig, "", []byte(vecBody))
	f.Add(vecID, vecTS, "v1a,AAAA v1, v1,,, "+vecSig, vecSig, []byte(vecBody))
	f.Add("id", "-1", "v1,", "", []byte{})
	f.Add(vecID, "99999999999999999999", vecSig, "", []byte(nil))
	a := newAdapter(f, vecNow)
	key, err := signature.DecodeWebhookSecret(vecSecret)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, ts, sig, svixSig string, body []byte) {
		h := http.Header{}
		h.Set(standard.HeaderID, id)
		h.Set(standard.HeaderTimestamp, ts)
		h.Set(standard.HeaderSignature, sig)
		if svixSig != "" {
			h.Set(standard.HeaderSvixSignature, svixSig)
		}
		err := a.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
		if err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) {
				t.Fatalf("Verify error %v does not wrap providers.ErrUnauthorized", err)
			}
			return
		}
		want := signature.WebhookSignatures([][]byte{key}, id, ts, body)
		if !strings.Contains(" "+strings.Join(strings.Fields(sig+" "+svixSig), " ")+" ", " "+want+" ") {
			t.Fatalf("accepted %q, which lacks the message's signature", sig)
		}
	})
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzParse checks that no id or body makes Parse panic, that every
// rejection wraps providers.ErrMalformed, and that an accepted delivery
// yields a usable event keyed by its id.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(vecID, b)
	}
	for _, s := range []string{"", "null", "{}", "[]", `{"type":1}`, `{"type":"a b"}`, `{"type":"a","Type":"b"}`,
		`{"data":{"x":1,"X":2}}`, `{"type":"a.b"`, `{"TYPE":"a"}`, "\xff", `{"type":"\u0000"}`} {
		f.Add("msg_1", []byte(s))
	}
	f.Add("", []byte(`{}`))
	f.Add("msg 1", []byte(`{}`))
	a := newAdapter(f, vecNow)
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		h := http.Header{}
		h.Set(standard.HeaderID, id)
		h.Set(standard.HeaderTimestamp, vecTS)
		h.Set(standard.HeaderSignature, vecSig)
		ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Header: h, Body: body}))
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap providers.ErrMalformed", err)
			}
			return
		}
		if ev.Key != id || !providers.IsToken(ev.Key, standard.MaxIDBytes) ||
			(ev.Type != "" && !providers.IsToken(ev.Type, standard.MaxTypeBytes)) || !hex64.MatchString(ev.Fingerprint) {
			t.Fatalf("Parse accepted id %q body %q with event %+v", id, body, ev)
		}
	})
}
