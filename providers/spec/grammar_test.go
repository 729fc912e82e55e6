package spec_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/spec"
)

// grammar is a built-in spec that replaced a hand-written adapter, and
// the signature headers on which the two read the grammar differently:
// the only deliveries they did not agree on (docs/provider-specs.md, "The
// Go adapters that stay Go"), each a header the gateway never sends. The
// test below holds the spec to its side of each, so the difference the
// gateway's page documents (docs/providers/<name>.md, "Header grammar")
// cannot drift.
type grammar struct {
	spec    string
	header  string
	sep     string
	secret  string
	vectors []vector
	// differs are the header mutations the adapter and the spec judged
	// differently, with the adapter's verdict and the spec's (a
	// providers.Reason, "" for accepted).
	differs map[string][2]string
	// only names, for a mutation of differs, the one header it differed
	// on (a vector, "vector <name>"); without, it differed on every
	// header.
	only map[string]string
}

type vector struct {
	name   string
	secret string
	now    time.Time
	header string
	body   string
}

var grammars = []grammar{{
	spec:   "stripe",
	header: "Stripe-Signature",
	sep:    ",",
	secret: "whsec_agree_a",
	vectors: []vector{{
		name: "rotation", secret: vecStripeSecret, now: time.Unix(vecStripeT+60, 0),
		header: vecStripeRotation, body: vecStripeBody,
	}, {
		name: "rolled", secret: vecStripeSecretRolled, now: time.Unix(vecStripeT+60, 0),
		header: "t=1700000000,v1=" + vecStripeV1 + ",v1=" + vecStripeV1Rolled, body: vecStripeBody,
	}},
	// stripe-go's grammar, which the adapter kept, against the spec
	// format's: stripe-go refuses a whole header for one item that is not
	// exactly key=value and reads t as any base-10 integer (the last t
	// wins), signing its reformatted value; the spec trims items, ignores
	// an item that is not key=value, and signs t as sent, once.
	differs: map[string][2]string{
		"a space":                  {invalid, missing},
		"another assign":           {invalid, missing},
		"the separator":            {invalid, missing},
		"t empty":                  {invalid, missing},
		"an item with two assigns": {invalid, ""},
		"an item without assign":   {invalid, ""},
		"separator after":          {invalid, ""},
		"separator before":         {invalid, ""},
		"space before separators":  {invalid, ""},
		"space after":              {invalid, ""},
		"space after separators":   {invalid, ""},
		"space before":             {timestamp, ""},
		"assigns doubled":          {invalid, timestamp},
		"t zz":                     {invalid, timestamp},
		"t +v":                     {"", timestamp},
		"t 0v":                     {"", invalid},
		"t twice":                  {"", invalid},
		"upper case":               {invalid, missing},
		"without t":                {timestamp, missing},
	},
}, {
	spec:   "paddle",
	header: "Paddle-Signature",
	sep:    ";",
	secret: "pdl_ntfset_agree_a",
	vectors: []vector{{
		name: "paddle-go-sdk", secret: vecPaddleGoSecret, now: time.Unix(vecPaddleGoTS+5, 0),
		header: vecPaddleGoHeader, body: vecPaddleGoBody,
	}, {
		name: "paddle-node-sdk", secret: vecPaddleNodeSecret, now: time.Unix(vecPaddleNodeTS, 0),
		header: vecPaddleNodeHeader, body: vecPaddleNodeBody,
	}, {
		name: "paddle-node-sdk multiple", secret: vecPaddleNodeSecret, now: time.Unix(vecPaddleNodeTS, 0),
		header: vecPaddleNodeMultiHeader, body: vecPaddleNodeMultiBody,
	}, {
		name: "paddle-python-sdk", secret: vecPaddlePySecretGood, now: time.Unix(vecPaddlePyTS, 0),
		header: vecPaddlePyHeader, body: vecPaddlePyBody,
	}},
	// The adapter's grammar against the spec format's: the adapter refused
	// a whole header for one item that is not exactly key=value and a ts
	// that is missing or not 1 to 18 digits as a malformed signature; the
	// spec trims items, ignores an item that is not key=value, calls a ts
	// that is not a number a bad timestamp and a missing one a missing
	// signed part, and reads headers up to 8 KiB where the adapter stopped
	// at 4.
	differs: map[string][2]string{
		"a space":                  {invalid, missing},
		"another assign":           {invalid, missing},
		"the separator":            {invalid, missing},
		"ts empty":                 {invalid, missing},
		"upper case":               {invalid, missing},
		"without ts":               {invalid, missing},
		"an item with two assigns": {invalid, ""},
		"an item without assign":   {invalid, ""},
		"half":                     {invalid, ""},
		"padded to 5 KiB":          {invalid, ""},
		"separator after":          {invalid, ""},
		"separator before":         {invalid, ""},
		"space after":              {invalid, ""},
		"space after separators":   {invalid, ""},
		"space before":             {invalid, ""},
		"space before separators":  {invalid, ""},
		"assigns doubled":          {invalid, timestamp},
		"ts +v":                    {invalid, timestamp},
		"ts -1":                    {invalid, timestamp},
		"ts zz":                    {invalid, timestamp},
	},
	// Half a header still holds a whole h1 only in the node SDK's header
	// of two.
	only: map[string]string{"half": "vector paddle-node-sdk multiple"},
}}

// The reasons of the differs lists.
const (
	missing   = providers.ReasonSignatureMissing
	invalid   = providers.ReasonSignatureInvalid
	timestamp = providers.ReasonTimestamp
)

// TestHeaderGrammar damages the signature header of each published vector
// and of every fixture of fixtures/<name>/ signed by the spec, and holds
// the spec's verdict on each mutation of the differs list to the one it
// gave when it was compared with the adapter. Every name on the list must
// be met, so the list cannot outlive the mutations it names.
func TestHeaderGrammar(t *testing.T) {
	for _, g := range grammars {
		t.Run(g.spec, func(t *testing.T) { holdGrammar(t, g) })
	}
}

func holdGrammar(t *testing.T, g grammar) {
	ctx := context.Background()
	met := map[string]bool{}
	check := func(what string, p *spec.Provider, d providers.Delivery) {
		t.Helper()
		for _, m := range headerMutations(d.Header.Get(g.header), g.sep) {
			want, ok := g.differs[m.name]
			if !ok {
				continue
			}
			met[m.name] = true
			got := ""
			if err := p.Verify(ctx, withHeader(d, g.header, m.value)); err != nil {
				got = providers.Reason(err)
			}
			if only, ok := g.only[m.name]; ok && only != what {
				// Elsewhere the two agreed, on the adapter's verdict.
				require.Equal(t, want[0], got, "%s, header mutation %s: the verdict the adapter and the spec agreed on", what, m.name)
				continue
			}
			require.Equal(t, want[1], got, "%s, header mutation %s: the spec's verdict of the differs list", what, m.name)
		}
	}
	for _, v := range g.vectors {
		p, err := spec.NewBuiltin(g.spec, []string{v.secret}, nil, func() time.Time { return v.now })
		require.NoError(t, err)
		d := providers.Delivery{Header: http.Header{g.header: {v.header}}, Body: []byte(v.body)}
		require.NoError(t, p.Verify(ctx, d), v.name)
		check("vector "+v.name, p, d)
	}
	paths, err := filepath.Glob(filepath.Join("..", "..", "fixtures", g.spec, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	now := time.Unix(1_750_000_000, 0)
	p, err := spec.NewBuiltin(g.spec, []string{g.secret}, nil, func() time.Time { return now })
	require.NoError(t, err)
	for _, path := range paths {
		if strings.HasSuffix(path, ".headers.json") {
			continue
		}
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		d, err := p.Sign(body)
		require.NoError(t, err)
		check(filepath.Base(path), p, d)
	}
	for name := range g.differs {
		require.True(t, met[name], "differs names %q, which no mutation is", name)
	}
}

// withHeader is d with the signature header set to values (none: removed).
func withHeader(d providers.Delivery, name string, values ...string) providers.Delivery {
	h := d.Header.Clone()
	h.Del(name)
	for _, v := range values {
		h.Add(name, v)
	}
	return providers.Delivery{Header: h, Query: d.Query, Body: d.Body}
}

// mutation is a damaged signature header, named for the differs lists.
type mutation struct{ name, value string }

// headerMutations are the ways a signature header can be damaged, reordered
// or padded: each item dropped, doubled and moved, spaces around the
// separators, its case changed, a byte flipped, truncated, and too long.
func headerMutations(h, sep string) []mutation {
	items := strings.Split(h, sep)
	out := []mutation{{"empty", ""}, {"a space", " "}, {"the separator", sep}, {"separator after", h + sep},
		{"separator before", sep + h}, {"a byte more", h + "0"}, {"a byte less", h[:len(h)-1]}, {"half", h[:len(h)/2]},
		{"upper case", strings.ToUpper(h)}, {"space after separators", strings.ReplaceAll(h, sep, sep+" ")},
		{"space before separators", strings.ReplaceAll(h, sep, " "+sep)}, {"space before", " " + h}, {"space after", h + " "},
		{"an item without assign", h + sep + "junk"}, {"an item with two assigns", h + sep + "x=y=z"},
		{"too long", h + sep + strings.Repeat("a", 9<<10)}, {"padded to 5 KiB", h + sep + "x=" + strings.Repeat("a", 5<<10)},
		{"assigns doubled", strings.ReplaceAll(h, "=", "==")}, {"another assign", strings.ReplaceAll(h, "=", ":")}}
	for i, item := range items {
		k, v, _ := strings.Cut(item, "=")
		drop := append(append([]string{}, items[:i]...), items[i+1:]...)
		out = append(out, mutation{"without " + k, strings.Join(drop, sep)})
		twice := append(append([]string{}, items...), item)
		out = append(out, mutation{k + " twice", strings.Join(twice, sep)})
		first := append([]string{item}, drop...)
		out = append(out, mutation{k + " first", strings.Join(first, sep)})
		for _, nv := range []struct{ name, v string }{{"empty", ""}, {"0v", "0" + v}, {"v0", v + "0"}, {"-1", "-1"},
			{"+v", "+" + v}, {"upper", strings.ToUpper(v)}, {"zz", "zz"}} {
			changed := append([]string{}, items...)
			changed[i] = k + "=" + nv.v
			out = append(out, mutation{k + " " + nv.name, strings.Join(changed, sep)})
		}
	}
	return out
}
