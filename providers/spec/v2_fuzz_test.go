package spec

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCompact holds writeCompact to encoding/json.Compact on every valid
// JSON text: only the whitespace between tokens goes, so a sender that
// hashed json.Compact of its body and webhookd agree.
func FuzzCompact(f *testing.F) {
	f.Add([]byte(`{"partnerServiceId":"    9042", "a" : [ 1, "x\" y" ] }`))
	f.Add([]byte("{\n\t\"k\": \"\\\\\" , \"n\": null}\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var want bytes.Buffer
		if json.Compact(&want, body) != nil {
			return
		}
		var got bytes.Buffer
		writeCompact(&got, body)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("compact of %q is %q, json.Compact's %q", body, got.Bytes(), want.Bytes())
		}
	})
}

// FuzzForm feeds bodies to the form reader: it never panics, and a form
// it reads gives each field once, and is given back unchanged by
// withField setting a field to its own raw value.
func FuzzForm(f *testing.F) {
	f.Add([]byte("MERCHANTID=TEST01&MERCHANT_TRANID=OID00001&AMOUNT=192.00&TXN_STATUS=A&SIGNATURE=D8"))
	f.Add([]byte("a=&b&c=%41%2B+x"))
	f.Fuzz(func(t *testing.T, body []byte) {
		form, err := parseForm(body)
		if err != nil {
			return
		}
		for i, g := range form {
			for _, h := range form[i+1:] {
				if g.name == h.name {
					t.Fatalf("%s read twice from %q", g.name, body)
				}
			}
			if g.start > g.end || g.end > len(body) {
				t.Fatalf("field %s at [%d, %d] of %d bytes", g.name, g.start, g.end, len(body))
			}
		}
		out := withField(body, form, form[0].name, form[0].value)
		again, err := parseForm(out)
		if err != nil {
			t.Fatalf("rewritten form %q does not read: %v", out, err)
		}
		if v, _ := again.get(form[0].name); v != form[0].value {
			t.Fatalf("%s is %q after rewriting, was %q", form[0].name, v, form[0].value)
		}
	})
}
