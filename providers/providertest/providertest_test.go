package providertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
	"github.com/webhookd/webhookd/providers/providertest"
	"github.com/webhookd/webhookd/signature"
)

// toyURL is the notification URL a toy is configured with: like DOKU's
// path or a gateway's registered URL, it is signed but not sent.
const toyURL = "https://shop.example/toy/notify"

// toy is a small HMAC-signed provider for testing the kit itself: header
// X-Toy-Signature is "<unix>.<hex HMAC of url.unix.body>" under any of its
// secrets (Sign uses the first), the key is the body's id, and its
// "attempt" counts up on each retry. Each flaw, when set, breaks one
// property the kit must catch.
type toy struct {
	secrets []string
	now     func() time.Time
	flaw    string
}

func (p *toy) Name() string { return "toy" }

func (p *toy) Sign(body []byte) (providers.Delivery, error) {
	secret := p.secrets[0]
	if p.flaw == "signs-with-last" {
		secret = p.secrets[len(p.secrets)-1]
	}
	ts := strconv.FormatInt(p.now().Unix(), 10)
	h := http.Header{}
	h.Set("X-Toy-Signature", ts+"."+p.mac(secret, ts, body))
	return providers.Delivery{Header: h, Body: body}, nil
}

// mac is the signature over the URL, ts and body, as flawed as the toy is.
func (p *toy) mac(secret, ts string, body []byte) string {
	url := toyURL + "."
	switch p.flaw {
	case "ignores-secret":
		secret = "fixed"
	case "ignores-body":
		body = nil
	case "ignores-url":
		// What the kit missed before published examples: Sign and
		// Verify agree, and neither covers the URL the provider signs.
		url = ""
	case "signs-fields":
		// Midtrans's shape: the signature covers some members only, and
		// the type comes from one it does not cover.
		var v struct {
			ID     string `json:"id"`
			Amount int    `json:"amount"`
		}
		_ = json.Unmarshal(body, &v)
		body = fmt.Appendf(nil, "%s|%d", v.ID, v.Amount)
	}
	return signature.HMACSHA256Hex([]byte(secret), []byte(url+ts+"."), body)
}

func (p *toy) Verify(_ context.Context, d providers.Delivery) error {
	missing, unauthorized := providers.ErrSignatureMissing, providers.ErrSignatureInvalid
	switch p.flaw {
	case "wrong-error-class":
		missing, unauthorized = providers.ErrMalformed, providers.ErrMalformed
	case "reasonless":
		missing = providers.ErrUnauthorized
	}
	switch p.flaw {
	case "accepts-anything":
		return nil
	case "accepts-unsigned":
		if d.Header.Get("X-Toy-Signature") == "" {
			return nil
		}
	}
	if d.Header.Get("X-Toy-Signature") == "" {
		return missing
	}
	ts, sig, ok := strings.Cut(d.Header.Get("X-Toy-Signature"), ".")
	if !ok {
		return unauthorized
	}
	secrets := p.secrets
	if p.flaw == "accepts-first-only" {
		secrets = secrets[:1]
	}
	for _, secret := range secrets {
		if signature.EqualString(p.mac(secret, ts, d.Body), sig) {
			return nil
		}
	}
	return unauthorized
}

func (p *toy) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, p.event)
}

func (p *toy) event(body []byte) (providers.Event, error) {
	var v struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		Amount  int    `json:"amount"`
		Attempt int    `json:"attempt"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.ID == "" {
		return providers.Event{}, providers.ErrMalformed
	}
	// encoding/json alone takes "ID" after "id" for the same field, last
	// one wins; the core service could read the other one.
	if _, err := rawjson.Parse(body); err != nil && p.flaw != "names-folded-last-wins" {
		return providers.Event{}, providers.ErrMalformed
	}
	key := v.ID
	switch p.flaw {
	case "key-per-attempt":
		key = fmt.Sprintf("%s:%d", v.ID, v.Attempt)
	case "same-key":
		key = "toy"
	case "key-with-space":
		key = v.ID + " x"
	}
	fp := fmt.Sprintf("%s|%s|%d", v.ID, v.Kind, v.Amount)
	if p.flaw == "fingerprint-ignores-amount" {
		fp = fmt.Sprintf("%s|%s", v.ID, v.Kind)
	}
	if p.flaw == "fingerprint-per-attempt" {
		fp += fmt.Sprintf("|%d", v.Attempt)
	}
	return providers.Event{Key: key, Type: v.Kind, Fingerprint: fp}, nil
}

var attempt = regexp.MustCompile(`"attempt": ([0-9]+)`)

// toyExample is the toy's published example: signed for toyURL with
// its secret at 1700000000, computed with Python's hmac apart from
// this code.
var toyExample = providertest.Example{
	Source: "providers/providertest/providertest_test.go (the toy's own documentation)",
	Secret: "toy-published-secret",
	Now:    time.Unix(1700000060, 0),
	Delivery: providers.Delivery{
		Header: http.Header{"X-Toy-Signature": {"1700000000.4c0ae346db36324c2bdb02983f6b6e490c79a5f0990801b81737c8f5eca6f476"}},
		Body:   []byte(`{"id": "evt_published", "kind": "paid", "amount": 100, "attempt": 1}`),
	},
	Keys: []string{"evt_published"},
}

// verifyOnly is the toy without its Sign: an adapter that is no
// providers.Signer, as PayPal's is not.
type verifyOnly struct{ toy *toy }

func (p verifyOnly) Name() string { return p.toy.Name() }
func (p verifyOnly) Verify(ctx context.Context, d providers.Delivery) error {
	return p.toy.Verify(ctx, d)
}
func (p verifyOnly) Parse(d providers.Delivery) ([]providers.Item, error) { return p.toy.Parse(d) }

// refusesToSign is the toy whose Sign refuses as a public-key spec's does.
type refusesToSign struct{ *toy }

func (refusesToSign) Sign([]byte) (providers.Delivery, error) {
	return providers.Delivery{}, fmt.Errorf("toy: %w: only the sender holds its key", providers.ErrCannotSign)
}

// kit is the toy's Kit with flaw. A flaw prefixed "no-signer/" or
// "refuses-to-sign/" is the rest of it in a toy that cannot sign.
func kit(flaw string) providertest.Kit {
	wrap := func(p *toy) providers.Provider { return p }
	if rest, ok := strings.CutPrefix(flaw, "no-signer/"); ok {
		flaw, wrap = rest, func(p *toy) providers.Provider { return verifyOnly{p} }
	} else if rest, ok := strings.CutPrefix(flaw, "refuses-to-sign/"); ok {
		flaw, wrap = rest, func(p *toy) providers.Provider { return refusesToSign{p} }
	}
	k := providertest.Kit{
		New: func(secrets []string, now func() time.Time) (providers.Provider, error) {
			return wrap(&toy{secrets: secrets, now: now, flaw: flaw}), nil
		},
		Secrets:  [2]string{"toy-secret-a", "toy-secret-b"},
		Fixtures: "testdata/toy",
		Retry: func(body []byte) []byte {
			return attempt.ReplaceAllFunc(body, func(m []byte) []byte {
				n, _ := strconv.Atoi(string(attempt.FindSubmatch(m)[1]))
				return fmt.Appendf(nil, `"attempt": %d`, n+1)
			})
		},
		Change:       providertest.ChangeAmount("amount"),
		SignedFields: signedFields(flaw),
		Examples:     []providertest.Example{toyExample},
	}
	if flaw == "no-example" {
		k.Examples = nil
	}
	return k
}

// signedFields declares honestly what the toy's signature covers.
func signedFields(flaw string) []string {
	if flaw == "signs-fields" {
		return []string{"id", "amount"}
	}
	return nil
}

// TestToy runs the kit on the toy adapter with the flaw named by
// PROVIDERTEST_FLAW; TestKitCatchesFlaws runs it in a child process for each
// flaw, since a failing kit fails the test that runs it.
func TestToy(t *testing.T) {
	providertest.Run(t, kit(os.Getenv("PROVIDERTEST_FLAW")))
}

func TestKitCatchesFlaws(t *testing.T) {
	if _, child := os.LookupEnv("PROVIDERTEST_FLAW"); child {
		t.Skip("child process")
	}
	tests := []struct {
		flaw string
		want string // in the failing child's output
	}{
		{"accepts-anything", "TamperedRefused/signature_byte"},
		{"accepts-unsigned", "TamperedRefused/missing_signature"},
		{"ignores-body", "TamperedRefused/signed_byte"},
		{"ignores-secret", "--- FAIL: TestToy/event_1.json/Rotation"},
		{"signs-with-last", "Sign must use the first secret"},
		{"accepts-first-only", "which is configured second"},
		{"wrong-error-class", "delivery not authenticated"},
		{"reasonless", "must wrap the class of reason signature_missing"},
		{"key-per-attempt", "same key, type and fingerprint"},
		{"fingerprint-per-attempt", "same key, type and fingerprint"},
		{"fingerprint-ignores-amount", "must change the fingerprint"},
		{"same-key", "distinct events need distinct keys"},
		{"key-with-space", "printable ASCII without spaces"},
		{"names-folded-last-wins", "--- FAIL: TestToy/event_1.json/DuplicateFieldsRefused"},
		{"signs-fields", "kind is not signed, yet changing it"},
		// Every property but the published example passes: Sign and
		// Verify agree on leaving the signed URL out.
		{"ignores-url", "the published example must verify"},
		{"no-example", "state a published example"},
	}
	for _, tt := range tests {
		t.Run(tt.flaw, func(t *testing.T) {
			t.Parallel()
			out, err := runKit("TestToy", "PROVIDERTEST_FLAW", tt.flaw)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the kit must fail on flaw %s; output:\n%s", tt.flaw, out)
			require.Contains(t, string(out), tt.want)
			require.True(t, bytes.Contains(out, []byte("--- FAIL: TestToy")), "output:\n%s", out)
		})
	}
}

// runKit runs test in a child process with env set to flaw, since a
// failing kit fails the test that runs it, and returns its output.
func runKit(test, env, flaw string) ([]byte, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+flaw)
	return cmd.CombinedOutput()
}

// TestKitWithoutSigner: an adapter that cannot sign (no providers.Signer,
// or a Sign that refuses with ErrCannotSign) passes on its published
// example and its fixtures' distinct keys, each signing property logged as
// not applying and why; the example still catches a flaw, and is then
// required.
func TestKitWithoutSigner(t *testing.T) {
	if _, child := os.LookupEnv("PROVIDERTEST_FLAW"); child {
		t.Skip("child process")
	}
	for _, how := range []string{"no-signer/", "refuses-to-sign/"} {
		out, err := runKit("TestToy", "PROVIDERTEST_FLAW", how)
		require.NoError(t, err, "output:\n%s", out)
		require.Contains(t, string(out), "SignedVerifies, TamperedRefused, Rotation,", how)
		require.Contains(t, string(out), "StaleRefused do not apply: ", how)
		require.Contains(t, string(out), map[string]string{"no-signer/": "provider toy cannot sign", "refuses-to-sign/": "only the sender holds its key"}[how], how)
		require.Contains(t, string(out), "checked against its published examples only", how)
		require.Contains(t, string(out), "--- PASS: TestToy/PublishedExample", how)
		require.Contains(t, string(out), "--- PASS: TestToy/DistinctEventsDistinct", how)
		require.NotContains(t, string(out), "TestToy/event_1.json/", "%s: no signing property runs", how)

		for flaw, want := range map[string]string{
			"ignores-url": "the published example must verify",
			"no-example":  "Kit.Examples are required",
			"same-key":    "distinct events need distinct keys",
		} {
			out, err := runKit("TestToy", "PROVIDERTEST_FLAW", how+flaw)
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the kit must fail on flaw %s; output:\n%s", how+flaw, out)
			require.Contains(t, string(out), want, how+flaw)
		}
	}
}

// TestIgnoresURLPassesEverythingElse: the flaw the published example
// catches slips through every property that checks the adapter against
// its own Sign, which is why the kit requires an example.
func TestIgnoresURLPassesEverythingElse(t *testing.T) {
	if _, child := os.LookupEnv("PROVIDERTEST_FLAW"); child {
		t.Skip("child process")
	}
	out, _ := runKit("TestToy", "PROVIDERTEST_FLAW", "ignores-url")
	fails := regexp.MustCompile(`--- FAIL: (\S+)`).FindAllStringSubmatch(string(out), -1)
	var names []string
	for _, m := range fails {
		names = append(names, m[1])
	}
	require.ElementsMatch(t, []string{"TestToy", "TestToy/PublishedExample", "TestToy/PublishedExample/" + strings.ReplaceAll(toyExample.Source, " ", "_")}, names)
}

func TestBumpPendingWebhooks(t *testing.T) {
	require.Equal(t, `{"a":1,"pending_webhooks" : 3,"b":2}`, string(providertest.BumpPendingWebhooks([]byte(`{"a":1,"pending_webhooks" : 2,"b":2}`))))
	require.Equal(t, `{"pending_webhooks":10}`, string(providertest.BumpPendingWebhooks([]byte(`{"pending_webhooks":9}`))))
	require.Equal(t, `{"a":1}`, string(providertest.BumpPendingWebhooks([]byte(`{"a":1}`))))
}

func TestChangeAmount(t *testing.T) {
	tests := []struct {
		names      []string
		body, want string
	}{
		{[]string{"amount"}, `{"amount": 100,"b":1}`, `{"amount": 1100,"b":1}`},
		{[]string{"gross_amount"}, `{"gross_amount" : "60000.00"}`, `{"gross_amount" : "160000.00"}`},
		{[]string{"amount"}, `{"data":{"object":{"amount":0}},"amount":5}`, `{"data":{"object":{"amount":10}},"amount":5}`},
		{[]string{"amount", "captured_amount"}, `{"request_amount":1,"captured_amount":2}`, `{"request_amount":1,"captured_amount":12}`},
		{[]string{"amount"}, `{"amount":"n/a"}`, `{"amount":"n/a"}`},
		{[]string{"amount"}, `{"a":1}`, `{"a":1}`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, string(providertest.ChangeAmount(tt.names...)([]byte(tt.body))), tt.body)
	}
}

func TestReordered(t *testing.T) {
	require.Equal(t, `{"c":{"x": 1.50},"b":"\u0041","a":1}`,
		string(providertest.Reordered([]byte("{\n \"a\": 1, \"b\": \"\\u0041\",\n \"c\": {\"x\": 1.50}}\n"))))
	require.Equal(t, `{}`, string(providertest.Reordered([]byte(` {} `))))
	require.Equal(t, `[1]`, string(providertest.Reordered([]byte(`[1]`))))
}

func TestWithMember(t *testing.T) {
	add := providertest.WithMember("new", `{"v":1}`)
	require.Equal(t, `{"new":{"v":1}, "a": 1}`, string(add([]byte(`{ "a": 1}`))))
	require.Equal(t, ` {"new":{"v":1}}`, string(add([]byte(` {}`))))
	require.Equal(t, `{"new":2}`, string(add([]byte(`{"new":2}`))), "an existing member is left alone")
	require.Equal(t, `nope`, string(add([]byte(`nope`))))
	chained := providertest.Chain(providertest.Reordered, add)
	require.Equal(t, `{"new":{"v":1},"b":2,"a":1}`, string(chained([]byte(`{"a":1,"b":2}`))))
}
