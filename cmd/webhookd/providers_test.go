package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/replay"
)

// statusChecked are the providers whose status check is on by default.
var statusChecked = map[string]bool{"midtrans": true, "duitku": true}

// TestEveryProviderServesAndReplays proves, for each provider table entry,
// the whole path a new provider must work on: its variables set from the
// table (a list with spaces around its items, as operators write them),
// the registry built from them, its fixtures signed by `webhookd replay`,
// delivered to a real receiver and forwarded to the core service once each.
func TestEveryProviderServesAndReplays(t *testing.T) {
	table := providerTable()
	require.NotEmpty(t, table)
	for _, e := range table {
		t.Run(e.Name, func(t *testing.T) {
			fixtures, err := filepath.Glob(filepath.Join("..", "..", "fixtures", e.Name, "*.json"))
			require.NoError(t, err)
			fixtures = slices.DeleteFunc(fixtures, func(p string) bool { return strings.HasSuffix(p, replay.HeadersSuffix) })
			require.NotEmpty(t, fixtures, "every provider ships fixtures in fixtures/%s", e.Name)

			clearEnv(t)
			core := newCore(t)
			t.Setenv("WEBHOOKD_DATA_DIR", t.TempDir())
			t.Setenv("WEBHOOKD_DOWNSTREAM_URL", core.URL)
			t.Setenv("WEBHOOKD_ADDR", "127.0.0.1:0")
			t.Setenv("WEBHOOKD_ADMIN_ADDR", "127.0.0.1:0")
			enabling := 0
			for _, v := range envVars(e.Settings()) {
				if testValue(v) == "" {
					continue
				}
				enabling++
				value := testValue(v)
				if v.field.Kind() == reflect.Slice {
					// Two items with spaces around them. A test value
					// may list its own second item, for a secret format
					// that takes no suffix (whsec_ and base64); a spec's
					// example, in whatever encoding, is listed twice.
					first, second, listed := strings.Cut(testValue(v), ",")
					switch {
					case listed:
					case v.field.IsValid():
						second = first + "_second"
					default:
						second = first
					}
					value = " " + first + " , " + second + " "
				}
				t.Setenv(v.key, value)
			}
			require.NotZero(t, enabling, "%s: give its enabling variables values in testValues (testvalues_test.go)", e.Name)
			if statusChecked[e.Name] {
				// The fixtures are no transactions a status API knows
				// (receiver's and the adapters' tests run the check
				// against a stand-in): opted out, as an operator can.
				t.Setenv("WEBHOOKD_"+strings.ToUpper(e.Name)+"_VERIFY_STATUS", "false")
			}
			t.Setenv("WEBHOOKD_RETENTION", fixtureRetention)

			cfg, err := loadConfig()
			require.NoError(t, err)
			require.NoError(t, cfg.checkServe())
			reg, err := buildRegistry(cfg)
			require.NoError(t, err)
			require.Equal(t, []string{e.Name}, reg.Names(), "the example values enable exactly this provider")

			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan string, 1)
			served := make(chan error, 1)
			go func() { served <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), ready) }()
			t.Cleanup(func() {
				cancel()
				require.NoError(t, <-served)
			})
			var addr string
			select {
			case addr = <-ready:
			case err := <-served:
				t.Fatalf("serve: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not listen")
			}

			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"replay", "--url", "http://" + addr, filepath.Join("..", "..", "fixtures", e.Name)}, &stdout, &stderr)
			require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			// A fixture only its provider can sign (PayPal's) is sent with
			// its captured headers, or skipped, saying why, when they do not
			// verify here: the shipped ones carry no PayPal signature.
			skipped := 0
			if m := skippedFixtures.FindStringSubmatch(stdout.String()); m != nil {
				skipped, _ = strconv.Atoi(m[1])
			}
			adapter, _ := reg.Lookup(e.Name)
			if _, err := providers.Sign(adapter, nil); !errors.Is(err, providers.ErrCannotSign) {
				require.Zero(t, skipped, "a provider webhookd signs for has nothing to skip:\n%s", stdout.String())
			}
			// Each event forwarded once: one per fixture, or one per item
			// of a batch (Adyen's).
			events := len(fixtures) - skipped
			if providers.AckOf(adapter) != nil {
				events = 0
				for _, f := range fixtures {
					body, err := os.ReadFile(f)
					require.NoError(t, err)
					items, err := adapter.Parse(providers.Delivery{Body: body})
					require.NoError(t, err, f)
					events += len(items)
				}
			}
			require.Equal(t, events, core.total(), "each event forwarded once:\n%s", stdout.String())
			require.Empty(t, stderr.String())

			// --id-suffix makes every fixture a new event, so a rehearsal
			// runs again without deleting keys; the same suffix a second
			// time is a retry of those events, answered from the store.
			// A spec names its id fields (replay.id_field) itself.
			_, known := replay.EventIDPaths(e.Name)
			if named, ok := adapter.(interface{ EventIDFields() []string }); ok && len(named.EventIDFields()) > 0 {
				_, err := providers.Sign(adapter, nil)
				known = !errors.Is(err, providers.ErrCannotSign)
			}
			if known && skipped == 0 {
				for range 2 {
					stdout.Reset()
					code := run(context.Background(), []string{"replay", "--url", "http://" + addr, "--id-suffix", "_r2", filepath.Join("..", "..", "fixtures", e.Name)}, &stdout, &stderr)
					require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
				}
				require.Equal(t, 2*events, core.total(), "each event forwarded once more:\n%s", stdout.String())
				require.Contains(t, stdout.String(), "replayed")
			}
		})
	}
}

// skippedFixtures finds the count of skipped fixtures in replay's summary.
var skippedFixtures = regexp.MustCompile(`; ([0-9]+) fixtures? skipped`)

// TestProviderTableIsConsistent checks what the table promises the rest of
// the command: unique names, a Secret that is one of the entry's own
// variables, variables of a type the loader reads, and no name taken twice.
func TestProviderTableIsConsistent(t *testing.T) {
	names := map[string]bool{}
	seen := map[string]bool{}
	for _, v := range envVars(&config{}) {
		seen[v.key] = true
	}
	for _, e := range providerTable() {
		require.NotEmpty(t, e.Name)
		require.False(t, names[e.Name], "%s listed twice", e.Name)
		names[e.Name] = true
		require.NotEmpty(t, e.SecretNoun, e.Name)
		own := false
		for _, v := range envVars(e.Settings()) {
			require.False(t, seen[v.key], "%s is declared twice", v.key)
			seen[v.key] = true
			require.NotEmpty(t, v.desc, "%s has no help text", v.key)
			if v.set == nil {
				require.NotErrorIs(t, setField(reflect.New(v.field.Type()).Elem(), "1"), errUnsupportedType, v.key)
			}
			own = own || v.key == envName(e.Secret)
		}
		require.True(t, own, "%s: Secret %s is not one of its variables", e.Name, e.Secret)
	}
}

// TestHelpListsEveryTableVariable: help reads the table, so every
// provider's variables and defaults are listed.
func TestHelpListsEveryTableVariable(t *testing.T) {
	var out bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"help"}, &out, &bytes.Buffer{}))
	for _, v := range allVars(&config{}) {
		require.Contains(t, out.String(), v.key)
		require.Contains(t, out.String(), v.desc)
	}
}

// TestLoadConfigLeavesTheEnvironment: reading the configuration must not
// unset or change variables (not even the empty ones), so a child
// process or a later read sees what the operator set.
func TestLoadConfigLeavesTheEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("WEBHOOKD_ADDR", "")
	t.Setenv("WEBHOOKD_XENDIT_CALLBACK_TOKENS", " tok_a , tok_b ")
	c, err := loadConfig()
	require.NoError(t, err)
	require.Equal(t, ":8080", c.Addr, "empty means the default")
	v, set := os.LookupEnv("WEBHOOKD_ADDR")
	require.True(t, set, "WEBHOOKD_ADDR was unset")
	require.Empty(t, v)
	require.Equal(t, " tok_a , tok_b ", os.Getenv("WEBHOOKD_XENDIT_CALLBACK_TOKENS"))
}

// TestUnknownVariablesAreWarned: a misspelt variable names the nearest
// known one on serve, replay and keys; test variables are not warned of.
func TestUnknownVariablesAreWarned(t *testing.T) {
	env := map[string]string{
		"WEBHOOKD_STRIPE_TOLRANCE":    "10m",
		"WEBHOOKD_TEST_POSTGRES_DSN":  "postgres://unused",
		"WEBHOOKD_STRIPE_SECRETS":     testSecret,
		"WEBHOOKD_DOWNSTREAM_URL":     "http://127.0.0.1:9/",
		"WEBHOOKD_DATA_DIR":           t.TempDir(),
		"WEBHOOKD_ADDR":               "127.0.0.1:bad",
		"WEBHOOKD_MIDTRANS_SERVERKEY": "SB-Mid-server-x",
		"WEBHOOKD_DISPATCH_RETRIES":   "1",
		"WEBHOOKD_LOG_FORMAT":         "text",
		"WEBHOOKD_PRUNE_INTERVAL":     "1m",
		"WEBHOOKD_MAX_READERS":        "126",
		"WEBHOOKD_STORE":              "lmdb",
		"WEBHOOKD_SHUTDOWN_GRACE":     "1s",
	}
	for _, args := range [][]string{
		{"serve"},
		{"replay", "--url", "http://127.0.0.1:9", stripeFixtures + "/payment_intent_succeeded.json"},
		{"keys", "list"},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, stderr, _ := execWebhookd(t, env, args...)
			require.Contains(t, stderr, "WEBHOOKD_STRIPE_TOLRANCE is not a webhookd variable and is ignored; did you mean WEBHOOKD_STRIPE_TOLERANCE?")
			require.Contains(t, stderr, "WEBHOOKD_MIDTRANS_SERVERKEY is not a webhookd variable and is ignored; did you mean WEBHOOKD_MIDTRANS_SERVER_KEY?")
			require.NotContains(t, stderr, "WEBHOOKD_TEST_POSTGRES_DSN")
			require.NotContains(t, stderr, "SB-Mid-server-x", "values are never repeated")
		})
	}
}

func TestNearestVariable(t *testing.T) {
	known := knownVariables(providerTable())
	tests := []struct{ typo, want string }{
		{"WEBHOOKD_STRIPE_TOLRANCE", "WEBHOOKD_STRIPE_TOLERANCE"},
		{"WEBHOOKD_STRIPE_SECRET", "WEBHOOKD_STRIPE_SECRETS"},
		{"WEBHOOKD_DOWNSTREAM_SECRETS", "WEBHOOKD_DOWNSTREAM_SECRET"},
		{"WEBHOOKD_XENDIT_CALLBACK_TOKEN", "WEBHOOKD_XENDIT_CALLBACK_TOKENS"},
		{"WEBHOOKD_DATADIR", "WEBHOOKD_DATA_DIR"},
		{"WEBHOOKD_LEASE_", "WEBHOOKD_LEASE"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, nearest(tt.typo, known), tt.typo)
	}
	require.Empty(t, unknownVariables([]string{"WEBHOOKD_ADDR=:1", "WEBHOOKD_TEST_X=1", "PATH=/bin", "GO_WANT_WEBHOOKD_MAIN=1"}, known))
	warnings := unknownVariables([]string{"WEBHOOKD_LEASE_=secret"}, known)
	require.Len(t, warnings, 1)
	require.False(t, strings.Contains(warnings[0], "secret"))
}

// TestDocsCoverTheTable: docs/contract.md gives every provider's event
// key. (docs_test.go holds the variables and the provider pages.)
func TestDocsCoverTheTable(t *testing.T) {
	contract, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract.md"))
	require.NoError(t, err)
	for _, e := range providerTable() {
		require.Contains(t, string(contract), "| "+e.Name+" |", "%s: docs/contract.md, Event keys", e.Name)
	}
}

// TestEnvVarsAreEnvconfigs holds the names loadVars reads to the ones the
// envconfig package derives from the same tags (and renders in help), for
// config and every provider's settings.
func TestEnvVarsAreEnvconfigs(t *testing.T) {
	keys := template.Must(template.New("keys").Parse(`{{range .}}{{.Key}} {{end}}`))
	specs := []any{&config{}}
	for _, e := range providerTable() {
		// A provider spec's variables are values, not tags: help
		// renders them itself (TestHelpListsEveryTableVariable).
		if _, values := e.Settings().(providers.VariableLister); !values {
			specs = append(specs, e.Settings())
		}
	}
	for _, spec := range specs {
		var want strings.Builder
		require.NoError(t, envconfig.Usaget(envPrefix, spec, &want, keys))
		var got []string
		for _, v := range envVars(spec) {
			got = append(got, v.key)
		}
		require.Equal(t, strings.Fields(want.String()), got, "%T", spec)
	}
}
