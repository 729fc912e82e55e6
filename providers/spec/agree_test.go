package spec_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/paddle"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/providers/stripe"
)

// goSigner is the part of a Go adapter the side-by-side test drives.
type goSigner interface {
	providers.Provider
	Sign(body []byte) (providers.Delivery, error)
}

// agreement is one Go adapter and the spec that replaces it.
type agreement struct {
	spec    string
	header  string
	sep     string
	secrets [2]string
	goNew   func(secrets []string, now func() time.Time) (goSigner, error)
	// vectors are the published deliveries the Go package was tested
	// with, each with the secret and the time it verifies at.
	vectors []vector
	// retry is how the gateway's retry of an event differs from its
	// first attempt (the kit's Kit.Retry), nil for the same body.
	retry func([]byte) []byte
	// differs are the header mutations on which the Go adapter and the
	// spec may disagree, with the Go verdict and the spec's (a
	// providers.Reason, "" for accepted) when they do: headers the
	// gateway never sends, each difference documented on the gateway's
	// page. The test holds both verdicts to the list, and every name on
	// it to a disagreement, so it cannot drift from the page.
	differs map[string][2]string
}

type vector struct {
	name   string
	secret string
	now    time.Time
	header string
	body   string
}

var agreements = []agreement{{
	spec:    "stripe",
	header:  "Stripe-Signature",
	sep:     ",",
	secrets: [2]string{"whsec_agree_a", "whsec_agree_b"},
	goNew: func(secrets []string, now func() time.Time) (goSigner, error) {
		return stripe.New(secrets, 5*time.Minute, stripe.WithClock(now))
	},
	retry: providertest.BumpPendingWebhooks,
	vectors: []vector{{
		name: "rotation", secret: "whsec_test_secret", now: time.Unix(1700000060, 0),
		header: "t=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990,v1=7548122dce5e2b728b67327c07959ace6ce459f5ca13822932dac476fc4e0005,v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39",
		body:   `{"id":"evt_test_webhook","object":"event"}`,
	}, {
		name: "rolled", secret: "whsec_test_secret_rolled_key", now: time.Unix(1700000060, 0),
		header: "t=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990,v1=7548122dce5e2b728b67327c07959ace6ce459f5ca13822932dac476fc4e0005",
		body:   `{"id":"evt_test_webhook","object":"event"}`,
	}},
	// stripe-go's grammar, which providers/stripe kept, against the spec
	// format's (docs/providers/stripe.md, "Header grammar"): stripe-go
	// refuses a whole header for one item that is not exactly key=value
	// and reads t as any base-10 integer (the last t wins), signing its
	// reformatted value; the spec trims items, ignores an item that is
	// not key=value, and signs t as sent, once.
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
	spec:    "paddle",
	header:  "Paddle-Signature",
	sep:     ";",
	secrets: [2]string{"pdl_ntfset_agree_a", "pdl_ntfset_agree_b"},
	goNew: func(secrets []string, now func() time.Time) (goSigner, error) {
		return paddle.New(secrets, 5*time.Minute, paddle.WithClock(now))
	},
	// The SDK vectors of providers/paddle/verify_test.go (docs/providers.md,
	// "Paddle"); their bodies are not events, so only the verdicts count.
	vectors: []vector{{
		name: "paddle-go-sdk", secret: "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr", now: time.Unix(1710929255+5, 0),
		header: "ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8",
		body:   `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`,
	}, {
		name: "paddle-node-sdk", secret: "VALID_SECRET", now: time.Unix(1698796800, 0),
		header: "ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9",
		body:   `{"data": ["1", "2"]}`,
	}, {
		name: "paddle-node-sdk multiple", secret: "VALID_SECRET", now: time.Unix(1698796800, 0),
		header: "ts=1698796800;h1=28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261;h1=28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261;h2=RANDOM_HASH",
		body:   `{"data": "value"}`,
	}, {
		name: "paddle-python-sdk", secret: "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh", now: time.Unix(1696195954, 0),
		header: "ts=1696195954;h1=dummy;h1=d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02",
		body:   "hello-world",
	}},
	// providers/paddle's grammar against the spec format's
	// (docs/providers/paddle.md, "Header grammar"): Go refuses a whole
	// header for one item that is not exactly key=value and a ts that is
	// missing or not 1 to 18 digits as a malformed signature; the spec
	// trims items, ignores an item that is not key=value, calls a ts
	// that is not a number a bad timestamp and a missing one a missing
	// signed part, and reads headers up to 8 KiB where Go stopped at 4.
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
}}

// The reasons of the differs lists.
const (
	missing   = providers.ReasonSignatureMissing
	invalid   = providers.ReasonSignatureInvalid
	timestamp = providers.ReasonTimestamp
)

// TestGoAndSpecAgree runs each Go adapter a built-in spec replaces and
// that spec side by side, over every fixture of fixtures/<name>/, the
// published vectors the Go package was tested with, the kit's body
// mutations (providertest.JSON) and mutations of the signature header,
// the clock and the secrets: on each delivery they must give the same
// verdict (accepted, or refused with the same providers.Reason) and, once
// verified, the same items (key, type, fingerprint) or parse refusal. A
// retry in flight across the upgrade, signed by the Go adapter and
// received by the spec, is then replayed rather than forwarded again or
// answered 422.
func TestGoAndSpecAgree(t *testing.T) {
	for _, a := range agreements {
		t.Run(a.spec, func(t *testing.T) { agree(t, a) })
	}
}

func agree(t *testing.T, a agreement) {
	file := filepath.Join("builtin", a.spec+".yaml")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	s, err := spec.Load(file, data)
	require.NoError(t, err)
	require.NoError(t, s.CheckExamples())

	now := time.Unix(1_750_000_000, 0)
	pair := func(secrets []string, at time.Time) (goSigner, providers.Provider) {
		clock := func() time.Time { return at }
		g, err := a.goNew(secrets, clock)
		require.NoError(t, err)
		p, err := s.New(secrets, nil, clock)
		require.NoError(t, err)
		return g, p
	}
	ctx := context.Background()
	checked := 0
	var same func(what string, d providers.Delivery, g, p providers.Provider)
	differs := map[string]bool{}
	verdict := func(err error) string {
		if err == nil {
			return ""
		}
		return providers.Reason(err)
	}
	mutated := func(what string, m mutation, d providers.Delivery, g, p providers.Provider) {
		t.Helper()
		want, ok := a.differs[m.name]
		if !ok {
			same(what+", header mutation: "+m.name, d, g, p)
			return
		}
		got := [2]string{verdict(g.Verify(ctx, d)), verdict(p.Verify(ctx, d))}
		if got[0] == got[1] {
			same(what+", header mutation: "+m.name, d, g, p)
			return
		}
		differs[m.name] = true
		require.Equal(t, want, got, "%s, header mutation %s: the Go and spec verdicts of the differs list", what, m.name)
	}
	same = func(what string, d providers.Delivery, g, p providers.Provider) {
		t.Helper()
		checked++
		ge, pe := g.Verify(ctx, d), p.Verify(ctx, d)
		if verdict(ge) != verdict(pe) {
			t.Errorf("%s: Go %v [%s], spec %v [%s]", what, ge, verdict(ge), pe, verdict(pe))
			return
		}
		if ge != nil {
			return
		}
		gi, ge := g.Parse(d)
		pi, pe := p.Parse(d)
		if (ge == nil) != (pe == nil) || providers.Reason(ge) != providers.Reason(pe) {
			t.Errorf("%s: parse: Go %v, spec %v", what, ge, pe)
			return
		}
		require.Equal(t, gi, pi, what)
	}

	for _, v := range a.vectors {
		g, p := pair([]string{v.secret}, v.now)
		d := providers.Delivery{Header: http.Header{a.header: {v.header}}, Body: []byte(v.body)}
		require.NoError(t, g.Verify(ctx, d), v.name)
		same("vector "+v.name, d, g, p)
		for _, m := range headerMutations(v.header, a.sep) {
			mutated("vector "+v.name, m, withHeader(d, a.header, m.value), g, p)
		}
	}

	paths, err := filepath.Glob(filepath.Join("..", "..", "fixtures", a.spec, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	g, p := pair(a.secrets[:1], now)
	other, otherSpec := pair(a.secrets[1:], now)
	rotG, rotP := pair([]string{a.secrets[1], a.secrets[0]}, now)
	for _, path := range paths {
		if strings.HasSuffix(path, ".headers.json") {
			continue
		}
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		name := filepath.Base(path)
		for signer, sign := range map[string]func([]byte) (providers.Delivery, error){"Go": g.Sign, "spec": p.(goSigner).Sign} {
			d, err := sign(body)
			require.NoError(t, err)
			what := name + " signed by " + signer
			same(what, d, g, p)
			same(what+", rotation", d, rotG, rotP)
			same(what+", another secret", d, other, otherSpec)
			same(what+", no header", withHeader(d, a.header), g, p)
			same(what+", header twice", withHeader(d, a.header, d.Header.Get(a.header), d.Header.Get(a.header)), g, p)
			for _, m := range headerMutations(d.Header.Get(a.header), a.sep) {
				mutated(what, m, withHeader(d, a.header, m.value), g, p)
			}
			for _, shift := range []time.Duration{-6 * time.Minute, -5*time.Minute - time.Second, -time.Second, 0,
				time.Second, 5*time.Minute - time.Second, 5 * time.Minute, 5*time.Minute + time.Second, 24 * time.Hour} {
				lg, lp := pair(a.secrets[:1], now.Add(shift))
				same(what+", received "+shift.String()+" later", d, lg, lp)
			}
		}
		// The first attempt keyed by the Go adapter, its retry (as the
		// gateway changes it) signed two minutes later and received by
		// the spec: the same key, type and fingerprint, so the store
		// replays the retry.
		orig, err := g.Sign(body)
		require.NoError(t, err)
		first, err := g.Parse(orig)
		require.NoError(t, err)
		again := body
		if a.retry != nil {
			again = a.retry(bytes.Clone(body))
			require.NotEqual(t, body, again, "%s: the retry changes the body", name)
		}
		retrier, later := pair(a.secrets[:1], now.Add(2*time.Minute))
		retry, err := retrier.Sign(again)
		require.NoError(t, err)
		require.NoError(t, later.Verify(ctx, retry), name)
		got, err := later.Parse(retry)
		require.NoError(t, err)
		require.Len(t, got, len(first), name)
		for i := range first {
			require.Equal(t, first[i].Event, got[i].Event, "%s: a retry across the upgrade", name)
		}

		f := providertest.JSON
		for _, field := range f.Names(t, body) {
			var bodies [][]byte
			bodies = append(bodies, f.Tamper(t, body, field)...)
			bodies = append(bodies, f.Without(t, body, field)...)
			bodies = append(bodies, f.Twice(body, field)...)
			bodies = append(bodies, f.Variants(t, body, field)...)
			for i, b := range bodies {
				what := name + " " + field + " mutation " + strconv.Itoa(i)
				d, err := g.Sign(b)
				require.NoError(t, err)
				same(what, d, g, p)
				// The mutated body under the original's signature.
				orig, err := g.Sign(body)
				require.NoError(t, err)
				if !bytes.Equal(b, body) {
					same(what+" unsigned", providers.Delivery{Header: orig.Header, Body: b}, g, p)
				}
			}
		}
	}
	for name := range a.differs {
		require.True(t, differs[name], "differs names %q, which no mutation is", name)
	}
	t.Logf("%s: %d deliveries agree, on %d header mutations as listed", a.spec, checked, len(differs))
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
