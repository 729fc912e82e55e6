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
