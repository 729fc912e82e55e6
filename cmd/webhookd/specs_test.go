package main

import (
	"bytes"
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
	"github.com/webhookd/webhookd/replay"
)

// specExample is the full example of docs/provider-specs.md.
const specExample = "../../providers/spec/testdata/paddle-billing.yaml"

// writeSpec writes the documented example, with old replaced by new, as
// acme.yaml in a new folder, and returns the file's path.
func writeSpec(t *testing.T, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(specExample)
	require.NoError(t, err)
	require.Contains(t, string(data), old)
	path := filepath.Join(t.TempDir(), "acme.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o600))
	return path
}

// TestBadSpecStopsServe: a spec that does not load stops serve (and fails
// `providers check`) with one line naming the file and the problem.
func TestBadSpecStopsServe(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"unknown algorithm", "algorithm: hmac-sha256", "algorithm: hmac-sha3", `signature.algorithm: unknown "hmac-sha3"`},
		{"header never sent", `signed: "{{signature.ts}}:{{body}}"`, `signed: "{{signature.ts}}:{{header.X-Nonce}}{{body}}"`,
			"signature: header X-Nonce is never sent by an example"},
		{"example fails", "Paddle-Signature: ts=1710929255;h1=6c05", "Paddle-Signature: ts=1710929255;h1=7c05", "example paddle-go-sdk: does not verify"},
		{"key path missing", `key: "{{json.event_id}}"`, `key: "{{json.id}}"`, "no usable event key (json.id is missing)"},
		{"name of a built-in", "name: paddle-billing", "name: stripe", `name "stripe" is already another provider's`},
		{"variable of another provider", "name: paddle-billing\n", "name: midtrans-server\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSpec(t, tt.old, tt.new)
			want := tt.want
			if tt.name == "variable of another provider" {
				// midtrans-server's SECRETS would do; KEY clashes.
				require.NoError(t, os.WriteFile(path, []byte(strings.Replace(readFile(t, path), "variable: SECRETS", "variable: KEY", 1)), 0o600))
				want = "variable WEBHOOKD_MIDTRANS_SERVER_KEY is already provider midtrans's"
			}
			_, stderr, code := execWebhookd(t, map[string]string{
				"WEBHOOKD_PROVIDER_SPECS": filepath.Dir(path),
				"WEBHOOKD_DOWNSTREAM_URL": "http://127.0.0.1:9/",
				"WEBHOOKD_DATA_DIR":       t.TempDir(),
			}, "serve")
			require.NotZero(t, code)
			require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
			require.Contains(t, stderr, "WEBHOOKD_PROVIDER_SPECS: "+path+": ")
			require.Contains(t, stderr, want)

			var out, errb bytes.Buffer
			require.Equal(t, 1, run(context.Background(), []string{"providers", "check", path}, &out, &errb))
			require.Contains(t, out.String(), "FAIL "+path+": ")
			require.Contains(t, out.String(), want)
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestProvidersCheck(t *testing.T) {
	var out, errb bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"providers", "check", specExample}, &out, &errb), errb.String())
	require.Equal(t, "ok   "+specExample+": paddle-billing, /webhooks/paddle-billing, 1 example(s) verified\n", out.String())
	out.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"providers", "check"}, &out, &errb))
	// The same spec twice: its name is taken by the first.
	out.Reset()
	require.Equal(t, 1, run(context.Background(), []string{"providers", "check", specExample, specExample}, &out, &errb))
	require.Contains(t, out.String(), `FAIL `+specExample+`: name "paddle-billing" is already another provider's`)
}

// TestProvidersListsEveryProvider: built in (Go and specs) and the
// operator's own, with route, origin and variables.
func TestProvidersListsEveryProvider(t *testing.T) {
	clearEnv(t)
	t.Setenv("WEBHOOKD_PROVIDER_SPECS", specExample)
	t.Setenv("WEBHOOKD_PADDLE_BILLING_SECRETS", "pdl_ntfset_a")
	t.Setenv("WEBHOOKD_PADDLE_BILLING_TOLRANCE", "1m")
	var out, errb bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"providers"}, &out, &errb), errb.String())
	require.Contains(t, errb.String(), "WEBHOOKD_PADDLE_BILLING_TOLRANCE is not a webhookd variable and is ignored; did you mean WEBHOOKD_PADDLE_BILLING_TOLERANCE?")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 1+len(providerTable())+1, out.String())
	for _, e := range providerTable() {
		require.Contains(t, out.String(), "/webhooks/"+e.Name+" ")
	}
	last := strings.Fields(lines[len(lines)-1])
	require.Equal(t, []string{"paddle-billing", "/webhooks/paddle-billing", specExample, "yes",
		"WEBHOOKD_PADDLE_BILLING_SECRETS", "WEBHOOKD_PADDLE_BILLING_TOLERANCE=5m"}, last)
}

// TestSpecConfigErrorsNameTheVariable: a spec's variables are checked
// like a Go adapter's.
func TestSpecConfigErrorsNameTheVariable(t *testing.T) {
	for env, want := range map[string]string{
		"WEBHOOKD_PADDLE_BILLING_TOLERANCE=soon": `WEBHOOKD_PADDLE_BILLING_TOLERANCE: cannot parse "soon" as a duration`,
		"WEBHOOKD_PADDLE_BILLING_TOLERANCE=0s":   "WEBHOOKD_PADDLE_BILLING_TOLERANCE: must be positive",
		"WEBHOOKD_PADDLE_BILLING_TOLERANCE=200h": "WEBHOOKD_PADDLE_BILLING_TOLERANCE: 200h0m0s must be shorter than WEBHOOKD_RETENTION",
		"WEBHOOKD_PADDLE_BILLING_SECRETS=a,,b":   "WEBHOOKD_PADDLE_BILLING_SECRETS: item 2 of 3 is empty",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := loadConfigFrom([]string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/", "WEBHOOKD_PROVIDER_SPECS=" + specExample,
			"WEBHOOKD_PADDLE_BILLING_SECRETS=pdl_a", k + "=" + v})
		require.ErrorContains(t, err, want, env)
	}
}

// TestUserSpecEndToEnd serves a spec from WEBHOOKD_PROVIDER_SPECS: a
// signed delivery is forwarded once, its resend replayed, a tampered one
// refused, and one signed with the old secret of a rotation accepted.
func TestUserSpecEndToEnd(t *testing.T) {
	core := newCore(t)
	srv := startServe(t, map[string]string{
		"WEBHOOKD_PROVIDER_SPECS":         specExample,
		"WEBHOOKD_PADDLE_BILLING_SECRETS": "pdl_new, pdl_old",
		"WEBHOOKD_DOWNSTREAM_URL":         core.URL,
		"WEBHOOKD_DATA_DIR":               t.TempDir(),
	})
	specs, err := spec.LoadPath(specExample)
	require.NoError(t, err)
	signer := func(secret string) *spec.Provider {
		p, err := specs[0].New([]string{secret}, nil, time.Now)
		require.NoError(t, err)
		return p
	}
	post := func(d providers.Delivery) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.url+"/webhooks/paddle-billing", bytes.NewReader(d.Body))
		require.NoError(t, err)
		for k, v := range d.Header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	body := []byte(`{"event_id":"evt_spec_1","event_type":"transaction.completed","occurred_at":"2024-03-20T10:07:35Z","data":{"id":"txn_1"}}`)
	d, err := signer("pdl_new").Sign(body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, post(d).StatusCode)
	resend := post(d)
	require.Equal(t, http.StatusCreated, resend.StatusCode)
	require.Equal(t, "true", resend.Header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, core.count("paddle-billing:evt_spec_1"))
	f := core.get("paddle-billing:evt_spec_1", 0)
	require.Equal(t, "transaction.completed", f.header.Get("Webhook-Event-Type"))
	require.Equal(t, string(body), string(f.body))

	tampered := d
	tampered.Body = bytes.Replace(body, []byte("txn_1"), []byte("txn_2"), 1)
	require.Equal(t, http.StatusUnauthorized, post(tampered).StatusCode)

	old, err := signer("pdl_old").Sign(bytes.Replace(body, []byte("evt_spec_1"), []byte("evt_spec_2"), 1))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, post(old).StatusCode)
	require.Equal(t, 1, core.count("paddle-billing:evt_spec_2"))
	require.Equal(t, 2, core.total())
}

// TestEveryBuiltInProviderIsInTheTable: every Go adapter under providers/
// (a package with settings.go, but the spec engine) and every spec of providers/spec/builtin is
// in the provider table once, the Go ones first: read from the tree, so
// that adding a provider edits no list here.
func TestEveryBuiltInProviderIsInTheTable(t *testing.T) {
	var names []string
	for _, e := range providerTable() {
		names = append(names, e.Name)
	}
	var goNames, specNames []string
	dirs, err := os.ReadDir(repoFile("providers"))
	require.NoError(t, err)
	for _, d := range dirs {
		if _, err := os.Stat(repoFile("providers", d.Name(), "settings.go")); d.IsDir() && err == nil && d.Name() != "spec" {
			goNames = append(goNames, d.Name())
		}
	}
	specs, err := filepath.Glob(repoFile("providers", "spec", "builtin", "*.yaml"))
	require.NoError(t, err)
	for _, p := range specs {
		specNames = append(specNames, strings.TrimSuffix(filepath.Base(p), ".yaml"))
	}
	require.GreaterOrEqual(t, len(goNames), 7)
	require.GreaterOrEqual(t, len(specNames), 11)
	require.Len(t, names, len(goNames)+len(specNames))
	require.ElementsMatch(t, goNames, names[:len(goNames)], "the Go adapters, one line each in goProviders()")
	require.ElementsMatch(t, specNames, names[len(goNames):], "the embedded specs")
}

// TestHelpListsSpecVariables: help lists the variables of the specs of
// WEBHOOKD_PROVIDER_SPECS, with defaults, and says when they do not load.
func TestHelpListsSpecVariables(t *testing.T) {
	clearEnv(t)
	t.Setenv("WEBHOOKD_PROVIDER_SPECS", specExample)
	var out bytes.Buffer
	require.Zero(t, run(context.Background(), []string{"help"}, &out, &bytes.Buffer{}))
	require.Regexp(t, `WEBHOOKD_PADDLE_BILLING_TOLERANCE\s+5m\s+how far a Paddle-Signature timestamp`, out.String())
	require.Contains(t, out.String(), "WEBHOOKD_SQUARE_NOTIFICATION_URL")

	t.Setenv("WEBHOOKD_PROVIDER_SPECS", filepath.Join(t.TempDir(), "absent.yaml"))
	out.Reset()
	require.Zero(t, run(context.Background(), []string{"help"}, &out, &bytes.Buffer{}))
	require.Contains(t, out.String(), "(WEBHOOKD_PROVIDER_SPECS: stat ")
	require.NotContains(t, out.String(), "WEBHOOKD_PADDLE_BILLING_TOLERANCE")
}

// TestProvidersCheckFolder: every file of a folder is reported, the bad
// one failing the exit status.
func TestProvidersCheckFolder(t *testing.T) {
	bad := writeSpec(t, "algorithm: hmac-sha256", "algorithm: hmac-md5")
	dir := filepath.Dir(bad)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "good.yaml"), []byte(readFile(t, specExample)), 0o600))
	var out, errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"providers", "check", dir}, &out, &errb))
	require.Equal(t, "FAIL "+bad+`: signature.algorithm: unknown "hmac-md5" (hmac-sha1, hmac-sha256, hmac-sha512 or token)`+"\n"+
		"ok   "+filepath.Join(dir, "good.yaml")+": paddle-billing, /webhooks/paddle-billing, 1 example(s) verified\n", out.String())
}

// TestProvidersCheckEveryClash: a clash does not hide the next file's, and
// a built-in spec's own file checks as itself.
func TestProvidersCheckEveryClash(t *testing.T) {
	first := writeSpec(t, "name: paddle-billing", "name: stripe")
	second := writeSpec(t, "name: paddle-billing", "name: square")
	var out, errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"providers", "check", first, second}, &out, &errb))
	require.Equal(t, "FAIL "+first+`: name "stripe" is already another provider's`+"\n"+
		"FAIL "+second+`: name "square" is already another provider's`+"\n", out.String())

	builtin := "../../providers/spec/builtin"
	out.Reset()
	require.Zero(t, run(context.Background(), []string{"providers", "check", builtin}, &out, &errb), out.String())
	require.Contains(t, out.String(), "ok   "+filepath.Join(builtin, "square.yaml")+": square, /webhooks/square, 1 example(s) verified (built in)\n")
}

// TestProvidersCheckRefusesWhatServeRefuses: check and serve run one
// validation in one environment, so a spec serve refuses (once its secret
// is set) fails check, naming the file; and check without a path checks
// WEBHOOKD_PROVIDER_SPECS.
func TestProvidersCheckRefusesWhatServeRefuses(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		env      []string
		want     string // in both errors; "" passes both
	}{
		{"the metrics' catch-all name", "name: paddle-billing", "name: unknown", nil,
			`name "unknown" cannot be a provider name: the metrics count requests to providers that are not configured as "unknown"`},
		{"a tolerance not below the retention", "default: 5m", "default: 200h", nil,
			"WEBHOOKD_PADDLE_BILLING_TOLERANCE: 200h0m0s must be shorter than WEBHOOKD_RETENTION (168h0m0s): a capture older than the retention would be forwarded again"},
		{"a tolerance below a longer retention", "default: 5m", "default: 200h", []string{"WEBHOOKD_RETENTION=300h"}, ""},
		{"a tolerance set below the retention", "default: 5m", "default: 200h", []string{"WEBHOOKD_PADDLE_BILLING_TOLERANCE=1h"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSpec(t, tt.old, tt.new)
			secrets := "WEBHOOKD_PADDLE_BILLING_SECRETS=pdl_ntfset_a"
			if tt.new == "name: unknown" {
				secrets = "WEBHOOKD_UNKNOWN_SECRETS=pdl_ntfset_a"
			}
			base := append([]string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/"}, tt.env...)
			_, serveErr := loadConfigFrom(append(base, "WEBHOOKD_PROVIDER_SPECS="+path, secrets))
			var out, errb bytes.Buffer
			code := checkSpecs([]string{path}, base, &out, &errb)
			// Without a path, WEBHOOKD_PROVIDER_SPECS.
			var fromEnv bytes.Buffer
			require.Equal(t, code, checkSpecs(nil, append(base, "WEBHOOKD_PROVIDER_SPECS="+path), &fromEnv, &errb), errb.String())
			require.Equal(t, out.String(), fromEnv.String())
			if tt.want == "" {
				require.NoError(t, serveErr)
				require.Zero(t, code, out.String())
				return
			}
			require.ErrorContains(t, serveErr, tt.want)
			require.Equal(t, 1, code)
			require.Equal(t, "FAIL "+path+": "+tt.want+"\n", out.String())
		})
	}
	var errb bytes.Buffer
	require.Equal(t, 2, checkSpecs(nil, nil, &bytes.Buffer{}, &errb))
	require.Equal(t, "webhookd providers check: name at least one spec file or folder, or set WEBHOOKD_PROVIDER_SPECS\n", errb.String())
}

// TestSpecProviderHints: with WEBHOOKD_PROVIDER_SPECS unset, replay of a
// spec provider's fixtures says to set it, and the warning that no
// provider is configured lists the operator's specs' variables too.
func TestSpecProviderHints(t *testing.T) {
	base := []string{"WEBHOOKD_DOWNSTREAM_URL=http://127.0.0.1:9/"}
	fixture := []replay.Fixture{{Path: "fixtures/paddle-billing/a.json", Provider: "paddle-billing", Body: []byte(`{}`)}}
	cfg, err := loadConfigFrom(base)
	require.NoError(t, err)
	_, _, err = replaySigners(cfg, fixture)
	require.ErrorContains(t, err, `fixtures/paddle-billing/a.json: "paddle-billing" is not a provider (`)
	require.ErrorContains(t, err, "while WEBHOOKD_PROVIDER_SPECS is unset: for a gateway described by a provider spec, set it to the spec's file or folder")

	cfg, err = loadConfigFrom(append(base, "WEBHOOKD_PROVIDER_SPECS="+specExample))
	require.NoError(t, err)
	_, _, err = replaySigners(cfg, fixture)
	require.EqualError(t, err, "WEBHOOKD_PADDLE_BILLING_SECRETS is not set: replay signs paddle-billing fixtures (fixtures/paddle-billing/a.json) with the notification secret serve verifies them with")
	w := noProviderWarning(cfg)
	require.Contains(t, w, "WEBHOOKD_STRIPE_SECRETS, ")
	require.True(t, strings.HasSuffix(w, " or WEBHOOKD_PADDLE_BILLING_SECRETS"), w)
}
