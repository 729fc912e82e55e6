package spec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
)

// parseSpec is a spec of a body-signed gateway, with event taken from
// the test case.
func parseSpec(t *testing.T, event string) *Provider {
	t.Helper()
	s := compileYAML(t, `
name: acme
secrets: {variable: SECRETS}
signature: {header: X-Sig, algorithm: hmac-sha256, encoding: hex, signed: "{{body}}"}
event: `+event+`
examples: [{secret: x, body: '{}', headers: {X-Sig: "00"}}]
`)
	return newProvider(t, s, []string{"k"}, nil, time.Now())
}

func TestParse(t *testing.T) {
	digest := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	tests := []struct {
		name, event, body string
		want              []providers.Item
		err               error
	}{
		{"id and type", `{key: "{{json.id}}", type: "{{json.type}}"}`, `{"id":"evt_1","type":"paid"}`,
			[]providers.Item{{Event: providers.Event{Key: "evt_1", Type: "paid"}}}, nil},
		{"nested path, number", `{key: "{{json.event.id}}:{{json.n}}"}`, `{"event":{"id":"e1"},"n":12.50}`,
			[]providers.Item{{Event: providers.Event{Key: "e1:12.50"}}}, nil},
		{"boolean", `{key: "{{json.id}}:{{json.ok}}"}`, `{"id":"a","ok":false}`,
			[]providers.Item{{Event: providers.Event{Key: "a:false"}}}, nil},
		{"fallback key: event name and digest", `{key: "{{json.event}}:{{digest}}", type: "{{json.event}}"}`, `{"event":"charge.success","data":{}}`,
			[]providers.Item{{Event: providers.Event{Key: "charge.success:" + digest(`{"event":"charge.success","data":{}}`), Type: "charge.success"}}}, nil},
		{"type absent is empty", `{key: "{{json.id}}", type: "{{json.meta.type}}"}`, `{"id":"a"}`,
			[]providers.Item{{Event: providers.Event{Key: "a"}}}, nil},
		{"batch, wrapped", `{batch: events, key: "{{json.id}}", type: "{{json.kind}}"}`, `{"events":[{"id":"a","kind":"x"}, {"id":"b","kind":"y"}]}`,
			[]providers.Item{{Event: providers.Event{Key: "a", Type: "x"}, Body: []byte(`{"events":[{"id":"a","kind":"x"}]}`)},
				{Event: providers.Event{Key: "b", Type: "y"}, Body: []byte(`{"events":[{"id":"b","kind":"y"}]}`)}}, nil},
		{"batch, elements", `{batch: events, batch_body: element, key: "{{json.id}}"}`, `{"events":[{"id":"a"}]}`,
			[]providers.Item{{Event: providers.Event{Key: "a"}, Body: []byte(`{"id":"a"}`)}}, nil},
		{"key missing", `{key: "{{json.id}}"}`, `{"ID2":"a"}`, nil, ErrNoEventKey},
		{"key null", `{key: "{{json.id}}"}`, `{"id":null}`, nil, ErrNoEventKey},
		{"key empty", `{key: "{{json.id}}"}`, `{"id":""}`, nil, ErrNoEventKey},
		{"key with a space", `{key: "{{json.id}}"}`, `{"id":"a b"}`, nil, ErrNoEventKey},
		{"key an object", `{key: "{{json.id}}"}`, `{"id":{}}`, nil, ErrNoEventKey},
		{"key in another case", `{key: "{{json.id}}"}`, `{"ID":"a"}`, nil, ErrNoEventKey},
		{"type not a token", `{key: "{{json.id}}", type: "{{json.type}}"}`, `{"id":"a","type":"x\ny"}`, nil, ErrInvalidType},
		{"duplicate member", `{key: "{{json.id}}"}`, `{"id":"a","id":"b"}`, nil, ErrNotJSON},
		{"case-folded duplicate", `{key: "{{json.id}}"}`, `{"data":{"x":1,"X":2},"id":"a"}`, nil, ErrNotJSON},
		{"not JSON", `{key: "{{json.id}}"}`, `id=a`, nil, ErrNotJSON},
		{"batch not an array", `{batch: events, key: "{{json.id}}"}`, `{"events":{}}`, nil, ErrBatch},
		{"batch empty", `{batch: events, key: "{{json.id}}"}`, `{"events":[]}`, nil, ErrBatch},
		{"batch of strings", `{batch: events, key: "{{json.id}}"}`, `{"events":["a"]}`, nil, ErrBatch},
		{"batch element without key", `{batch: events, key: "{{json.id}}"}`, `{"events":[{"id":"a"},{}]}`, nil, ErrNoEventKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parseSpec(t, tt.event)
			items, err := p.Parse(providers.Delivery{Body: []byte(tt.body)})
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				require.ErrorIs(t, err, providers.ErrMalformed)
				return
			}
			require.NoError(t, err)
			require.Len(t, items, len(tt.want))
			for i, want := range tt.want {
				require.Equal(t, want.Key, items[i].Key)
				require.Equal(t, want.Type, items[i].Type)
				require.Len(t, items[i].Fingerprint, 64)
				if want.Body == nil {
					want.Body = []byte(tt.body)
				}
				require.Equal(t, string(want.Body), string(items[i].Body))
			}
		})
	}
}

func TestBatchAck(t *testing.T) {
	require.Nil(t, parseSpec(t, `{key: "{{json.id}}"}`).Ack())
	ack := parseSpec(t, `{batch: events, key: "{{json.id}}"}`).Ack()
	require.Equal(t, &providers.Acknowledgement{Status: 200}, ack)
}

// TestFingerprint: the listed members only, in canonical form, so that
// white space and member order do not change it and other members do not
// count.
func TestFingerprint(t *testing.T) {
	p := parseSpec(t, `{key: "{{json.id}}", fingerprint: [id, data]}`)
	fp := func(body string) string {
		items, err := p.Parse(providers.Delivery{Body: []byte(body)})
		require.NoError(t, err)
		return items[0].Fingerprint
	}
	a := fp(`{"id":"a","data":{"x":1,"y":2},"attempt":1}`)
	require.Equal(t, a, fp(`{"attempt":2, "data":{"y":2,"x":1}, "id":"a"}`))
	require.NotEqual(t, a, fp(`{"id":"a","data":{"x":1,"y":3}}`))
}

// TestKeyFromSignedParts: a header or signature item in the key is read
// from the delivery as verified.
func TestKeyFromSignedParts(t *testing.T) {
	s := compileYAML(t, acmeSpec)
	s.key, _ = parseTemplate("{{header.X-Acme-Id}}:{{signature.t}}", headerRef, signatureRef)
	require.NoError(t, s.bindRefs("event.key", &s.key, false))
	now := time.Unix(1_700_000_000, 0)
	p := newProvider(t, s, []string{"k"}, nil, now)
	d, err := p.Sign([]byte(`{}`))
	require.NoError(t, err)
	require.NoError(t, p.Verify(context.Background(), d))
	items, err := p.Parse(d)
	require.NoError(t, err)
	require.Equal(t, "abc:1700000000", items[0].Key)
}
