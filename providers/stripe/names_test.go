package stripe_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/stripe"
)

// TestParseRefusesNameVariants: Go's encoding/json matches member names
// case-insensitively (with Unicode folding, last one wins), so a body that
// spells a member two ways, at any depth, says one thing to webhookd and
// another to such a core service. Parse refuses it, and a lone other
// spelling of a member Parse reads.
func TestParseRefusesNameVariants(t *testing.T) {
	tests := []struct{ name, body string }{
		// Once left to the core service to judge; refused at any depth now
		// that names are compared as leniently as the decoders match them.
		{"exact repeat, nested", `{"id":"evt_1","data":{"object":{"x":1,"x":2}}}`},
		{"type twice, upper-case", `{"id":"evt_1","object":"event","type":"charge.refunded","Type":"charge.succeeded"}`},
		{"type twice, all caps", `{"id":"evt_1","object":"event","type":"charge.refunded","TYPE":"charge.succeeded"}`},
		{"id twice, escaped upper-case", `{"id":"evt_1","\u0049D":"evt_2"}`},
		{"object twice, all caps", `{"id":"evt_1","object":"event","OBJECT":"charge"}`},
		{"status twice, long s (U+017F), nested", `{"id":"evt_1","data":{"object":{"status":"failed","ſtatus":"succeeded"}}}`},
		{"amount twice, nested", `{"id":"evt_1","data":{"object":{"amount":100,"Amount":100000}}}`},
		{"kind twice, upper-case, nested", `{"id":"evt_1","data":{"object":{"kind":"a","KIND":"b"}}}`},
		{"kind twice, Kelvin sign (U+212A), in an array", `{"id":"evt_1","data":{"object":{"lines":[{"kind":"a","` + "\u212a" + `ind":"b"}]}}}`},
		{"type spelled only another way", `{"id":"evt_1","Type":"charge.succeeded"}`},
		{"data spelled only another way", `{"id":"evt_1","type":"charge.succeeded","DATA":{"object":{"amount":1}}}`},
	}
	a := newAdapter(t, vecNow)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var probe map[string]any
			require.NoError(t, json.Unmarshal([]byte(tt.body), &probe), "the body is valid JSON")
			ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(tt.body)}))
			require.ErrorIs(t, err, providers.ErrMalformed)
			require.NotErrorIs(t, err, providers.ErrUnauthorized)
			require.Zero(t, ev)
		})
	}
	// What a Go core reads from the first body: the appended type.
	var core struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.Unmarshal([]byte(tests[1].body), &core))
	require.Equal(t, "charge.succeeded", core.Type)

	// Names that differ by more than case stay distinct members.
	ev, err := providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(`{"id":"evt_1","type":"charge.refunded","data":{"object":{"amount":1,"amount_refunded":1,"ammount":2}}}`)}))
	require.NoError(t, err)
	require.Equal(t, "evt_1", ev.Key)
	_, err = providertest.OneEvent(a.Parse(providers.Delivery{Body: []byte(`{"id":"evt_1","type":"charge.refunded","Type":"x"}`)}))
	require.ErrorIs(t, err, stripe.ErrNotJSON, "a repeated name is a malformed body, as an exact repeat is")
}
