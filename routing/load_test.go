package routing_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/spec"
	"github.com/webhookd/webhookd/routing"
)

// table is the providers the tests' files may name: Go adapters and
// built-in specs, as serve has them.
func table(t testing.TB) []providers.Entry {
	t.Helper()
	specs, err := spec.Builtin()
	require.NoError(t, err)
	out := []providers.Entry{midtrans.Entry(), adyen.Entry()}
	for _, s := range specs {
		out = append(out, s.Entry())
	}
	return out
}

var testEnv = map[string]string{
	"STRIPE_EU_SECRETS": "whsec_eu_secret",
	"STRIPE_US_SECRETS": "whsec_us_secret",
	"MIDTRANS_A_KEY":    "SB-Mid-server-a",
	"BILLING_TOKEN":     "tok",
}

func options(t testing.TB, env map[string]string) routing.Options {
	return routing.Options{
		Table: table(t),
		LookupEnv: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		},
		VarName:       func(s string) string { return "WEBHOOKD_" + s },
		DownstreamVar: "WEBHOOKD_DOWNSTREAM_URL",
		Env:           providers.Env{Lease: time.Minute, DispatchTimeout: 10 * time.Second, Retention: 168 * time.Hour},
		Defaults:      routing.DestinationDefaults{Timeout: 10 * time.Second, Retries: 2, FailedPolicy: "replay"},
		CheckTimeout: func(d time.Duration) error {
			if d >= time.Minute {
				return errors.New("WEBHOOKD_LEASE (1m0s) must be longer")
			}
			return nil
		},
	}
}

func parse(t testing.TB, file string, perm fs.FileMode, env map[string]string) (*routing.Config, error) {
	t.Helper()
	return routing.Parse("routes.yaml", []byte(file), perm, options(t, env))
}

const good = `version: 1
sources:
  - name: stripe-eu
    provider: stripe
    settings:
      secrets: ${STRIPE_EU_SECRETS}
      tolerance: 5m
  - name: stripe-us
    provider: stripe
    settings: {secrets: ["${STRIPE_US_SECRETS}", "whsec_$${literal}"]}
  - name: midtrans-a
    provider: midtrans
    settings: {server_key: "${MIDTRANS_A_KEY}", verify_status: true}
destinations:
  - name: billing
    url: https://billing.internal/webhooks
    timeout: 5s
    retries: 1
    failed_policy: retry
    headers: {Authorization: "Bearer ${BILLING_TOKEN}"}
  - name: ledger
    url: http://ledger.internal/events
routes:
  - source: stripe-eu
    types: ["invoice.*", "customer.subscription.*"]
    where: {data.object.currency: eur}
    to: [billing, ledger]
  - source: "*"
    to: [billing]
`

func TestParseGood(t *testing.T) {
	c, err := parse(t, good, 0o600, testEnv)
	require.NoError(t, err)
	require.Len(t, c.Sources, 3)
	eu, ok := c.Source("stripe-eu")
	require.True(t, ok)
	require.Equal(t, "stripe", eu.Entry.Name)
	require.Equal(t, "stripe", eu.Provider.Name())
	require.Equal(t, []string{"STRIPE_EU_SECRETS"}, eu.Variables)
	require.Equal(t, "stripe", c.ProviderOf("stripe-us"))
	us, _ := c.Source("stripe-us")
	for _, secret := range []string{"whsec_us_secret", "whsec_${literal}"} {
		body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
		h := http.Header{"Stripe-Signature": {stripeSignature(t, secret, time.Now(), body)}}
		require.NoError(t, us.Provider.Verify(context.Background(), providers.Delivery{Header: h, Body: body}), "a list, and $${ as a literal ${")
	}

	billing, ok := c.Destination("billing")
	require.True(t, ok)
	require.Equal(t, routing.Sync, billing.Delivery)
	require.Equal(t, 5*time.Second, billing.Timeout)
	require.Equal(t, 1, billing.Retries)
	require.Equal(t, "retry", billing.FailedPolicy)
	require.Equal(t, "Bearer tok", billing.Headers.Get("Authorization"))
	ledger, _ := c.Destination("ledger")
	require.Equal(t, 10*time.Second, ledger.Timeout, "the default is WEBHOOKD_DISPATCH_TIMEOUT's")
	require.Equal(t, 2, ledger.Retries)
	require.Equal(t, "replay", ledger.FailedPolicy)
	require.Empty(t, c.Warnings)
}

func TestRoute(t *testing.T) {
	c, err := parse(t, good, 0o600, testEnv)
	require.NoError(t, err)
	eu, _ := c.Source("stripe-eu")
	us, _ := c.Source("stripe-us")
	names := func(ds []*routing.Destination) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		src  *routing.Source
		typ  string
		body string
		want []string
	}{
		{"type and field match: both, each once", eu, "invoice.paid", `{"data":{"object":{"currency":"eur"}}}`, []string{"billing", "ledger"}},
		{"another currency", eu, "invoice.paid", `{"data":{"object":{"currency":"usd"}}}`, []string{"billing"}},
		{"absent field matches nothing", eu, "invoice.paid", `{"data":{}}`, []string{"billing"}},
		{"another type", eu, "charge.failed", `{"data":{"object":{"currency":"eur"}}}`, []string{"billing"}},
		{"another source", us, "invoice.paid", `{"data":{"object":{"currency":"eur"}}}`, []string{"billing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Route(tc.src, tc.typ, providers.NewBodyFields([]byte(tc.body)))
			require.Equal(t, tc.want, names(got))
		})
	}

	only, err := parse(t, strings.Replace(good, `  - source: "*"
    to: [billing]
`, "", 1), 0o600, testEnv)
	require.NoError(t, err)
	require.Empty(t, only.Route(us, "invoice.paid", providers.NewBodyFields(nil)), "unrouted")
}

func TestWhereComparesText(t *testing.T) {
	file := strings.Replace(good, "where: {data.object.currency: eur}", "where: {data.object.amount: 777, data.object.paid: true}", 1)
	c, err := parse(t, file, 0o600, testEnv)
	require.NoError(t, err)
	eu, _ := c.Source("stripe-eu")
	got := c.Route(eu, "invoice.paid", providers.NewBodyFields([]byte(`{"data":{"object":{"amount":"777","paid":true}}}`)))
	require.Len(t, got, 2, "777 and \"777\" are the same; every condition holds")
	got = c.Route(eu, "invoice.paid", providers.NewBodyFields([]byte(`{"data":{"object":{"amount":777,"paid":false}}}`)))
	require.Len(t, got, 1, "all conditions are needed")
}

// TestParseRefuses is the list of bad input: each is refused at
// load with one line naming the file, the line and the key.
func TestParseRefuses(t *testing.T) {
	repl := func(old, new string) string {
		require.Contains(t, good, old)
		return strings.Replace(good, old, new, 1)
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unknown top-level key", "sourcs: []\n" + good, "routes.yaml:1: sourcs: unknown key"},
		{"unknown key in a source", repl("    provider: midtrans\n", "    provider: midtrans\n    secret: x\n"), "routes.yaml:13: sources[2].secret: unknown key"},
		{"unknown key in a destination", repl("    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n    timout: 5s\n"), "routes.yaml:23: destinations[1].timout: unknown key"},
		{"unknown key in a route", repl("    to: [billing, ledger]\n", "    to: [billing, ledger]\n    form: x\n"), "routes.yaml:28: routes[0].form: unknown key"},
		{"a key given twice", repl("      tolerance: 5m\n", "      tolerance: 5m\n      tolerance: 6m\n"), "routes.yaml:8: sources[0].settings.tolerance: given twice"},
		{"duplicate source", repl("  - name: stripe-us\n", "  - name: stripe-eu\n"), "routes.yaml:8: sources[1].name: source \"stripe-eu\" is named twice"},
		{"duplicate destination", repl("  - name: ledger\n", "  - name: billing\n"), "routes.yaml:21: destinations[1].name: destination \"billing\" is named twice"},
		{"route to a missing destination", repl("to: [billing, ledger]", "to: [billing, ledgr]"), "routes.yaml:27: routes[0].to[1]: no destination \"ledgr\""},
		{"route from a missing source", repl("  - source: stripe-eu\n", "  - source: stripe-e\n"), "routes.yaml:24: routes[0].source: no source \"stripe-e\""},
		{"provider that does not exist", repl("    provider: midtrans\n", "    provider: midtran\n"), "routes.yaml:12: sources[2].provider: no provider \"midtran\""},
		{"setting the provider does not have", repl("      tolerance: 5m\n", "      tolerence: 5m\n"), "routes.yaml:7: sources[0].settings.tolerence: provider stripe has no setting \"tolerence\"; did you mean tolerance?"},
		{"missing required setting", repl("    settings: {server_key: \"${MIDTRANS_A_KEY}\", verify_status: true}\n", "    settings: {verify_status: true}\n"), "routes.yaml:11: sources[2].settings.server_key: required"},
		{"unparsable setting", repl("tolerance: 5m", "tolerance: soon"), "routes.yaml:7: sources[0].settings.tolerance: cannot parse"},
		{"setting the provider's check refuses", repl("tolerance: 5m", "tolerance: 0s"), "routes.yaml:7: sources[0].settings.tolerance: must be positive"},
		{"unset ${VAR}", repl("${BILLING_TOKEN}", "${BILLING_TOKEN_2}"), "routes.yaml:20: destinations[0].headers.Authorization: ${BILLING_TOKEN_2}: BILLING_TOKEN_2 is not set"},
		{"unclosed ${", repl("${BILLING_TOKEN}", "${BILLING_TOKEN"), "routes.yaml:20: destinations[0].headers.Authorization: ${ without its closing }"},
		{"source name not [a-z0-9][a-z0-9-]{0,62}", repl("  - name: stripe-us\n", "  - name: Stripe_US\n"), "routes.yaml:8: sources[1].name: \"Stripe_US\" is not"},
		{"destination name too long", repl("  - name: ledger\n", "  - name: "+strings.Repeat("l", 64)+"\n"), "routes.yaml:21: destinations[1].name:"},
		{"source named unknown", repl("  - name: stripe-us\n", "  - name: unknown\n"), "routes.yaml:8: sources[1].name: \"unknown\" is the label"},
		{"source named like another provider's route", repl("  - name: stripe-us\n", "  - name: midtrans\n"), "routes.yaml:8: sources[1].name: \"midtrans\" is provider midtrans's route"},
		{"where on a provider that signs a few fields", repl("  - source: \"*\"\n    to: [billing]\n", "  - source: midtrans-a\n    where: {order_id: x}\n    to: [billing]\n"), "routes.yaml:29: routes[1].where: source midtrans-a's provider midtrans does not sign the whole body"},
		{"where on \"*\" reaching an unsigned body", repl("  - source: \"*\"\n    to: [billing]\n", "  - source: \"*\"\n    where: {a: b}\n    to: [billing]\n"), "routes.yaml:29: routes[1].where: source midtrans-a's provider midtrans does not sign the whole body"},
		{"types on an unsigned event type", repl("  - name: midtrans-a\n    provider: midtrans\n    settings: {server_key: \"${MIDTRANS_A_KEY}\", verify_status: true}\n",
			"  - name: shop\n    provider: shopify\n    settings: {secrets: \"${MIDTRANS_A_KEY}\"}\n") + "  - source: shop\n    types: [\"orders/*\"]\n    to: [billing]\n",
			"routes.yaml:31: routes[2].types: source shop's provider shopify does not sign the event type"},
		{"types on an event type whose confirmation is off", strings.Replace(good, "verify_status: true", "verify_status: false", 1) + "  - source: midtrans-a\n    types: [settlement]\n    to: [billing]\n",
			"routes.yaml:31: routes[2].types: source midtrans-a's provider midtrans does not sign the event type"},
		{"a glob that is not one", repl(`"invoice.*"`, `"invoice.[*"`), "routes.yaml:25: routes[0].types[0]: \"invoice.[*\" is not a glob"},
		{"max_age not longer than the lease", repl("    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n    delivery: queue\n    max_age: 1m\n"), "routes.yaml:24: destinations[1].max_age: 1m0s is not longer than the lease (1m0s)"},
		{"rate of zero", repl("    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n    delivery: queue\n    rate: 0\n"), "routes.yaml:24: destinations[1].rate: \"0\" is not a positive number"},
		{"unknown delivery", repl("    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n    delivery: later\n"), "routes.yaml:23: destinations[1].delivery: \"later\" is not sync or queue"},
		{"queue setting on sync", repl("    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n    rate: 5\n"), "routes.yaml:23: destinations[1].rate: only for delivery: queue"},
		{"retries on queue", repl("    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n    delivery: queue\n    retries: 3\n"), "routes.yaml:24: destinations[1].retries: only for delivery: sync"},
		{"bad queue rate", repl("    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n    delivery: queue\n    rate: -1\n"), "routes.yaml:24: destinations[1].rate: \"-1\" is not a positive number"},
		{"timeout past the lease", repl("timeout: 5s", "timeout: 2m"), "routes.yaml:17: destinations[0].timeout: WEBHOOKD_LEASE (1m0s) must be longer"},
		{"bad timeout", repl("timeout: 5s", "timeout: 0s"), "routes.yaml:17: destinations[0].timeout: \"0s\" is not a positive duration"},
		{"bad retries", repl("retries: 1", "retries: -1"), "routes.yaml:18: destinations[0].retries:"},
		{"bad failed_policy", repl("failed_policy: retry", "failed_policy: drop"), "routes.yaml:19: destinations[0].failed_policy: \"drop\" is not replay or retry"},
		{"relative URL", repl("url: https://billing.internal/webhooks", "url: /webhooks"), "routes.yaml:16: destinations[0].url: not an absolute http(s) URL"},
		{"missing URL", repl("    url: http://ledger.internal/events\n", ""), "routes.yaml:21: destinations[1].url: required"},
		{"a header webhookd sets", repl("headers: {Authorization:", "headers: {Idempotency-Key: x, Authorization:"), "routes.yaml:20: destinations[0].headers.Idempotency-Key: webhookd sets this header itself"},
		{"a route without destinations", repl("to: [billing, ledger]", "to: []"), "routes.yaml:24: routes[0].to: at least one destination"},
		{"no sources", "destinations: []\nroutes: []\n", "routes.yaml:1: sources: at least one source is required"},
		{"no routes", repl("routes:\n", "unused:\n"), "routes.yaml:23: unused: unknown key"},
		{"a list where one value goes", repl("tolerance: 5m", "tolerance: [5m]"), "routes.yaml:7: sources[0].settings.tolerance: takes one value, not a list"},
		{"version other than 1", repl("version: 1", "version: 2"), "routes.yaml:1: version: must be 1"},
		{"YAML aliases", repl("    url: http://ledger.internal/events\n", "    url: &u http://ledger.internal/events\n    failed_policy: *u\n"), "routes.yaml:23: YAML aliases are not allowed"},
		{"not YAML", "sources: [", "routes.yaml: yaml:"},
		{"two documents", good + "---\n" + good, "routes.yaml: one YAML document only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.file, 0o600, testEnv)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
			for _, secret := range testEnv {
				require.NotContains(t, err.Error(), secret, "never a value")
			}
		})
	}
}

func TestSecretsInClearWarn(t *testing.T) {
	fromEnv := strings.Replace(good, `, "whsec_$${literal}"`, "", 1)
	clear := strings.Replace(fromEnv, "secrets: ${STRIPE_EU_SECRETS}", "secrets: whsec_written_here", 1)
	header := strings.Replace(fromEnv, `Authorization: "Bearer ${BILLING_TOKEN}"`, `Authorization: "Bearer tok"`, 1)
	for _, tc := range []struct {
		name string
		file string
		perm fs.FileMode
		warn bool
	}{
		{"secrets from the environment, readable", fromEnv, 0o644, false},
		{"a list item written in the file, readable", good, 0o644, true},
		{"a secret setting in clear, readable by others", clear, 0o604, true},
		{"a secret setting in clear, readable by group", clear, 0o640, true},
		{"a header in clear, readable", header, 0o644, true},
		{"in clear, owner only", clear, 0o600, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.file, tc.perm, testEnv)
			require.NoError(t, err)
			if !tc.warn {
				require.Empty(t, c.Warnings)
				return
			}
			require.Len(t, c.Warnings, 1)
			require.Contains(t, c.Warnings[0], "routes.yaml holds secrets in clear")
			require.NotContains(t, c.Warnings[0], "whsec_written_here")
		})
	}
}

func TestLoadReadsTheFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes.yaml")
	clear := strings.Replace(strings.Replace(good, `, "whsec_$${literal}"`, "", 1), "secrets: ${STRIPE_EU_SECRETS}", "secrets: whsec_written_here", 1)
	require.NoError(t, os.WriteFile(path, []byte(clear), 0o644))
	require.NoError(t, os.Chmod(path, 0o644))
	c, err := routing.Load(path, options(t, testEnv))
	require.NoError(t, err)
	require.Len(t, c.Warnings, 1)
	require.Contains(t, c.Warnings[0], path)
}

func TestIgnoredVariablesWarn(t *testing.T) {
	o := options(t, testEnv)
	o.Environ = []string{"WEBHOOKD_STRIPE_SECRETS=whsec_x", "WEBHOOKD_DOWNSTREAM_URL=http://core", "WEBHOOKD_MIDTRANS_API_URL=", "WEBHOOKD_ADDR=:1", "BILLING_TOKEN=tok"}
	c, err := routing.Parse("routes.yaml", []byte(good), 0o600, o)
	require.NoError(t, err)
	require.Equal(t, []string{
		"WEBHOOKD_DOWNSTREAM_URL is set but routes.yaml does not name it (${WEBHOOKD_DOWNSTREAM_URL}): it is ignored",
		"WEBHOOKD_STRIPE_SECRETS is set but routes.yaml does not name it (${WEBHOOKD_STRIPE_SECRETS}): it is ignored",
	}, c.Warnings)

	named := strings.Replace(good, "${STRIPE_EU_SECRETS}", "${WEBHOOKD_STRIPE_SECRETS}", 1)
	env := map[string]string{"WEBHOOKD_STRIPE_SECRETS": "whsec_x"}
	for k, v := range testEnv {
		env[k] = v
	}
	o.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err = routing.Parse("routes.yaml", []byte(named), 0o600, o)
	require.NoError(t, err)
	require.Len(t, c.Warnings, 1, "a variable the file names is not ignored")
}

// TestSettingsAreTheVariables holds a file's settings to the provider's
// variables: every variable of every provider is a setting of the same
// name, lower case, without the provider's prefix, with its default.
func TestSettingsAreTheVariables(t *testing.T) {
	for _, e := range table(t) {
		if e.Name != "stripe" && e.Name != "shopify" {
			continue
		}
		file := fmt.Sprintf("sources:\n  - name: s\n    provider: %s\n    settings: {secrets: whsec_a}\ndestinations:\n  - {name: d, url: \"http://core\"}\nroutes:\n  - to: [d]\n", e.Name)
		c, err := parse(t, file, 0o600, nil)
		require.NoError(t, err, e.Name)
		require.NotNil(t, c.Sources[0].Provider)
	}
	c, err := parse(t, good, 0o600, testEnv)
	require.NoError(t, err)
	us, _ := c.Source("stripe-us")
	// The variable's default tolerance, 5m: 4m old verifies, 6m does not.
	body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	for _, tc := range []struct {
		age time.Duration
		ok  bool
	}{{4 * time.Minute, true}, {6 * time.Minute, false}} {
		h := http.Header{"Stripe-Signature": {stripeSignature(t, "whsec_us_secret", time.Now().Add(-tc.age), body)}}
		err := us.Provider.Verify(context.Background(), providers.Delivery{Header: h, Body: body})
		require.Equal(t, tc.ok, err == nil, "the variable's default tolerance, %s old: %v", tc.age, err)
	}
}

func TestParseQueueDestination(t *testing.T) {
	for _, tc := range []struct {
		name, settings string
		want           routing.Destination
	}{
		{"defaults", "    delivery: queue\n",
			routing.Destination{MaxAge: routing.DefaultMaxAge, Concurrency: routing.DefaultConcurrency}},
		{"bounds", "    delivery: queue\n    max_age: 24h\n    rate: 50\n    concurrency: 8\n    timeout: 3s\n",
			routing.Destination{MaxAge: 24 * time.Hour, Rate: 50, Concurrency: 8, Timeout: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := strings.Replace(good, "    url: http://ledger.internal/events\n", "    url: http://ledger.internal/events\n"+tc.settings, 1)
			c, err := parse(t, file, 0o600, testEnv)
			require.NoError(t, err)
			ledger, _ := c.Destination("ledger")
			require.Equal(t, routing.Queue, ledger.Delivery)
			require.Equal(t, tc.want.MaxAge, ledger.MaxAge)
			require.Equal(t, tc.want.Rate, ledger.Rate)
			require.Equal(t, tc.want.Concurrency, ledger.Concurrency)
			require.Zero(t, ledger.Retries, "one attempt is one request")
			if tc.want.Timeout != 0 {
				require.Equal(t, tc.want.Timeout, ledger.Timeout, "one attempt's budget")
			}
		})
	}
}

// stripeSignature is the Stripe-Signature header of body signed with
// secret at time at, as the built-in stripe spec signs it.
func stripeSignature(t testing.TB, secret string, at time.Time, body []byte) string {
	t.Helper()
	h, err := spec.SignBuiltin("stripe", secret, at, body)
	require.NoError(t, err)
	return h.Get("Stripe-Signature")
}
