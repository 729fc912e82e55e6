package spec

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// FuzzLoad feeds spec files to the loader: whatever the input, Load
// returns a spec or one line of error, never panics, and a spec it
// returns has verified its examples.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"testdata", "builtin"} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("name: a\nsignature: {algorithm: token}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Load("fuzz.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		if err := s.CheckExamples(); err != nil {
			t.Fatalf("a loaded spec's examples fail: %v", err)
		}
	})
}

// FuzzVerifyParse feeds deliveries to a spec provider that reads a
// signature list, a timestamp, a header, a query value and a batch:
// Verify and Parse never panic, fail only with their own error classes,
// and anything Verify accepts is what Sign made.
func FuzzVerifyParse(f *testing.F) {
	s := fuzzSpec(f)
	now := time.Unix(1_700_000_000, 0)
	p, err := s.New([]string{"k1", "k2"}, nil, func() time.Time { return now })
	if err != nil {
		f.Fatal(err)
	}
	signed, err := p.Sign([]byte(`{"events":[{"id":"a","type":"t"},{"id":"b"}]}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(signed.Header.Get("Acme-Signature"), signed.Header.Get("X-Acme-Id"), signed.Query.Get("id"), string(signed.Body))
	f.Add("t=1700000000,v1=00,v1=", "", "", `{"events":[]}`)
	f.Add(",,=,t==,v1", "x", "X", `{"events":[{"ID":"a","id":"b"}]}`)
	f.Fuzz(func(t *testing.T, sig, id, q, body string) {
		d := providers.Delivery{
			Header: http.Header{"Acme-Signature": {sig}, "X-Acme-Id": {id}},
			Query:  url.Values{"id": {q}},
			Body:   []byte(body),
		}
		err := p.Verify(context.Background(), d)
		if err != nil {
			if !errors.Is(err, providers.ErrUnauthorized) {
				t.Fatalf("Verify: %v does not wrap ErrUnauthorized", err)
			}
		} else if sig != signed.Header.Get("Acme-Signature") || id != signed.Header.Get("X-Acme-Id") ||
			!strings.EqualFold(q, signed.Query.Get("id")) || body != string(signed.Body) {
			t.Fatalf("Verify accepted a delivery Sign did not make: %q %q %q %q", sig, id, q, body)
		}
		items, err := p.Parse(d)
		if err != nil {
			if !errors.Is(err, providers.ErrMalformed) {
				t.Fatalf("Parse: %v does not wrap ErrMalformed", err)
			}
			return
		}
		for _, it := range items {
			if !providers.IsToken(it.Key, MaxKeyBytes) || len(it.Fingerprint) != 64 {
				t.Fatalf("Parse: unusable event %+v", it.Event)
			}
		}
	})
}

// fuzzSpec is a spec that uses most of the format at once.
func fuzzSpec(tb testing.TB) *Spec {
	f, err := decode([]byte(`
name: acme
secrets: {variable: SECRETS}
settings: [{variable: TOLERANCE, type: duration, default: 5m, help: h}]
signature:
  header: Acme-Signature
  separator: ","
  assign: "="
  name: v1
  algorithm: hmac-sha256
  encoding: hex
  signed: "{{signature.t}}.{{header.X-Acme-Id}}.{{query.id | lower}}.{{body}}"
timestamp: {value: "{{signature.t}}", tolerance: TOLERANCE}
event: {batch: events, key: "{{json.id}}:{{header.X-Acme-Id}}", type: "{{json.type}}"}
replay: {headers: {X-Acme-Id: "{{digest}}"}}
examples: [{secret: x, now: "2024-01-01T00:00:00Z", url: "https://x/?id=Q1", body: "{}", headers: {Acme-Signature: "t=1,v1=00", X-Acme-Id: abc}}]
`))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := compile(f)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
