package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/webhookverify"
)

// envPrefix prefixes every variable: Addr is WEBHOOKD_ADDR.
const envPrefix = "WEBHOOKD"

// config is every WEBHOOKD_* variable but the providers' (docs/contract.md,
// "Variables"), which their table entries declare (providers.go). The tags
// are read by loadVars: envconfig is the name without the prefix, default
// and desc feed `webhookd help`.
type config struct {
	Addr              string        `envconfig:"ADDR" default:":8080" desc:"listen address"`
	DataDir           string        `envconfig:"DATA_DIR" default:"./data" desc:"LMDB environment directory (created if missing)"`
	DownstreamURL     string        `envconfig:"DOWNSTREAM_URL" desc:"core service endpoint verified events are forwarded to (required by serve)"`
	CaptureDir        string        `envconfig:"CAPTURE_DIR" desc:"if set, serve writes every verified delivery's raw body to <dir>/<provider>/<event-key>.json, for webhookd replay"`
	Lease             time.Duration `envconfig:"LEASE" default:"60s" desc:"how long an IN_FLIGHT claim is honoured (must exceed WEBHOOKD_DISPATCH_TIMEOUT)"`
	Retention         time.Duration `envconfig:"RETENTION" default:"168h" desc:"how long COMPLETED and FAILED records are kept"`
	MaxBodyBytes      int64         `envconfig:"MAX_BODY_BYTES" default:"1048576" desc:"larger request bodies get 413"`
	DispatchTimeout   time.Duration `envconfig:"DISPATCH_TIMEOUT" default:"10s" desc:"total time for forwarding one delivery, retries included"`
	DispatchRetries   int           `envconfig:"DISPATCH_RETRIES" default:"2" desc:"retries after the first forwarding attempt, within the timeout"`
	StoreTimeout      time.Duration `envconfig:"STORE_TIMEOUT" desc:"bound on each store call of a delivery (claim, record, release) and on /readyz; a call that runs out answers 503 with Retry-After (default: min(5s, (LEASE − DISPATCH_TIMEOUT)/3); set, WEBHOOKD_LEASE must exceed WEBHOOKD_DISPATCH_TIMEOUT plus twice it)"`
	FailedPolicy      string        `envconfig:"FAILED_POLICY" default:"replay" desc:"after a permanent downstream 4xx: replay (keep FAILED) or retry (release the key)"`
	Store             string        `envconfig:"STORE" default:"lmdb" desc:"dedupe store: lmdb (embedded, one node), postgres (shared by every node) or tiered (LMDB on each node in front of the shared Postgres)"`
	PostgresDSN       string        `envconfig:"POSTGRES_DSN" desc:"Postgres connection string; required by the postgres and tiered stores"`
	MapSize           int64         `envconfig:"MAP_SIZE" default:"268435456" desc:"initial LMDB map size in bytes; doubles when full"`
	MaxMapSize        int64         `envconfig:"MAX_MAP_SIZE" default:"1099511627776" desc:"largest LMDB map size in bytes"`
	MaxReaders        int           `envconfig:"MAX_READERS" default:"1024" desc:"LMDB reader slots shared by serve, keys and backup; serve uses at most 3/4 of them at once"`
	PruneInterval     time.Duration `envconfig:"PRUNE_INTERVAL" default:"1m" desc:"how often expired records are deleted, in bounded batches"`
	LogFormat         string        `envconfig:"LOG_FORMAT" default:"text" desc:"log format: text or json"`
	LogLevel          string        `envconfig:"LOG_LEVEL" default:"info" desc:"log level: debug, info, warn or error"`
	DownstreamSecrets []string      `envconfig:"DOWNSTREAM_SECRET" desc:"signs every forward (Standard Webhooks): whsec_<base64> or a plain string of 16+ bytes; comma-separated to sign with several during a rotation"`
	AdminAddr         string        `envconfig:"ADMIN_ADDR" default:"127.0.0.1:8081" desc:"the operator listener (console page, admin API, metrics); set to the empty string to turn it off"`
	AdminToken        string        `envconfig:"ADMIN_TOKEN" desc:"bearer token the admin listener requires (the console signs in with it); required when WEBHOOKD_ADMIN_ADDR is not a loopback address"`
	StoreRequests     bool          `envconfig:"STORE_REQUESTS" default:"true" desc:"keep each verified request's body and forwarded headers with its record (needed for redrive and the console); false keeps only the answer"`
	ShutdownGrace     time.Duration `envconfig:"SHUTDOWN_GRACE" desc:"after SIGTERM, how long in-flight deliveries may keep forwarding before they are cut off, released and answered 503 (default: WEBHOOKD_DISPATCH_TIMEOUT)"`
	PprofAddr         string        `envconfig:"PPROF_ADDR" desc:"if set, serve exposes Go's /debug/pprof/ on this loopback address (127.0.0.1:6060) for profiling; off by default"`
	ProviderSpecs     string        `envconfig:"PROVIDER_SPECS" desc:"a provider spec file, or a directory of *.yaml specs: each adds a gateway described as data (docs/provider-specs.md); one that does not load, or whose example does not verify, stops serve"`
	Config            string        `envconfig:"CONFIG" desc:"a YAML file of sources, destinations and routes (docs/routing.md); set, the providers' variables and WEBHOOKD_DOWNSTREAM_URL are read only where the file names them through ${...}; SIGHUP reloads it"`

	// storeTimeoutSet is whether the operator chose StoreTimeout; unset, it
	// is derived from the lease (defaultStoreTimeout).
	storeTimeoutSet bool
	// providers are the provider table's entries with their variables.
	providers []providerConfig
	// unknown warns of WEBHOOKD_* variables that nothing reads (typos).
	unknown []string
}

// loadConfig reads and checks the environment. Its errors are one line that
// names the variable at fault.
func loadConfig() (*config, error) {
	return loadConfigFrom(os.Environ())
}

// loadConfigFrom reads and checks environ (KEY=VALUE strings), leaving the
// process environment as it is.
func loadConfigFrom(environ []string) (*config, error) {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	lookup := func(k string) string { return env[k] }
	var c config
	if err := loadVars(envVars(&c), lookup); err != nil {
		return nil, err
	}
	table, err := userSpecs(c.ProviderSpecs)
	if err != nil {
		return nil, err
	}
	if c.providers, err = loadProviders(table, lookup); err != nil {
		return nil, err
	}
	c.unknown = unknownVariables(environ, knownVariables(table))
	// Set but empty turns the admin listener off (docs/contract.md), where
	// every other variable set empty takes its default.
	if v, ok := env[envName("ADMIN_ADDR")]; ok && strings.TrimSpace(v) == "" {
		c.AdminAddr = ""
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = c.DispatchTimeout
	}
	// Unset or empty, like every variable taking its default (loadVars).
	c.storeTimeoutSet = env[envName("STORE_TIMEOUT")] != ""
	if !c.storeTimeoutSet {
		c.StoreTimeout = defaultStoreTimeout(c.Lease, c.DispatchTimeout)
	}
	return &c, c.check()
}

// knownVariables lists every variable webhookd reads: config's and each
// provider's of table.
func knownVariables(table []providers.Entry) []string {
	var names []string
	for _, v := range envVars(&config{}) {
		names = append(names, v.key)
	}
	for _, e := range table {
		for _, v := range envVars(e.Settings()) {
			names = append(names, v.key)
		}
	}
	return names
}

// allVars lists config's variables, then each provider's in table order.
func allVars(c *config) []envVar {
	vars := envVars(c)
	for _, e := range providerTable() {
		vars = append(vars, envVars(e.Settings())...)
	}
	return vars
}

// warnUnknown writes the unknown-variable warnings, one line each, for the
// commands that have no logger.
func (c *config) warnUnknown(stderr io.Writer) {
	for _, w := range c.unknown {
		fmt.Fprintf(stderr, "webhookd: warning: %s\n", w)
	}
}

// check validates what serve needs beyond parsing.
func (c *config) check() error {
	v := func(name, format string, args ...any) error {
		return fmt.Errorf("%s_%s: %s", envPrefix, name, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Addr == "":
		return v("ADDR", "must not be empty")
	case c.DataDir == "":
		return v("DATA_DIR", "must not be empty")
	case c.Lease <= 0:
		return v("LEASE", "must be positive")
	case c.Retention <= 0:
		return v("RETENTION", "must be positive")
	case c.MaxBodyBytes <= 0:
		return v("MAX_BODY_BYTES", "must be positive")
	case c.DispatchTimeout <= 0:
		return v("DISPATCH_TIMEOUT", "must be positive")
	case c.DispatchRetries < 0:
		return v("DISPATCH_RETRIES", "must not be negative")
	// The contract's refusal (docs/contract.md): no store timeout could fit
	// then. A derived timeout of zero (a lease a few nanoseconds longer) is
	// the same fault.
	case c.Lease <= c.DispatchTimeout || (!c.storeTimeoutSet && c.StoreTimeout <= 0):
		return v("LEASE", "%s must be longer than WEBHOOKD_DISPATCH_TIMEOUT (%s), or a slow forward could be taken over and sent twice",
			c.Lease, c.DispatchTimeout)
	case c.StoreTimeout <= 0:
		return v("STORE_TIMEOUT", "must be positive")
	case c.Lease <= c.DispatchTimeout+c.leaseStoreCalls():
		return v("STORE_TIMEOUT", "%s is too long for WEBHOOKD_LEASE (%s): the lease must be longer than WEBHOOKD_DISPATCH_TIMEOUT (%s) plus twice it, or a slow forward could be taken over and sent twice; lower it, or unset it to derive it from the lease",
			c.StoreTimeout, c.Lease, c.DispatchTimeout)
	case c.FailedPolicy != "replay" && c.FailedPolicy != "retry":
		return v("FAILED_POLICY", "%q is not replay or retry", c.FailedPolicy)
	case c.MapSize <= 0:
		return v("MAP_SIZE", "must be positive")
	case c.MaxMapSize < c.MapSize:
		return v("MAX_MAP_SIZE", "must be at least WEBHOOKD_MAP_SIZE")
	case c.MaxReaders < 4:
		return v("MAX_READERS", "must be at least 4")
	case c.PruneInterval <= 0:
		return v("PRUNE_INTERVAL", "must be positive")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return v("LOG_FORMAT", "%q is not text or json", c.LogFormat)
	case c.ShutdownGrace < 0:
		return v("SHUTDOWN_GRACE", "must not be negative")
	}
	if c.PprofAddr != "" {
		if err := loopbackAddr(c.PprofAddr); err != nil {
			return v("PPROF_ADDR", "%v", err)
		}
	}
	if len(c.DownstreamSecrets) > 0 {
		// The errors name the secret by position, never by value.
		signer, err := webhookverify.NewSigner(c.DownstreamSecrets...)
		if err != nil {
			return v("DOWNSTREAM_SECRET", "%v", err)
		}
		if n := signer.MinKeyBytes(); n < dispatch.MinSigningKeyBytes {
			return v("DOWNSTREAM_SECRET", "a key is %d bytes; at least %d are needed", n, dispatch.MinSigningKeyBytes)
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return v("LOG_LEVEL", "%v", err)
	}
	switch c.Store {
	case "lmdb":
	case "postgres", "tiered":
		if strings.TrimSpace(c.PostgresDSN) == "" {
			return v("POSTGRES_DSN", "required by WEBHOOKD_STORE=%s: the connection string of the Postgres every node shares", c.Store)
		}
	default:
		return v("STORE", "%q is not lmdb, postgres or tiered", c.Store)
	}
	env := c.providerEnv()
	for _, p := range c.providers {
		if err := p.settings.Check(env); err != nil {
			return err
		}
	}
	return nil
}

// providerEnv is what the providers' Check and Warnings see of the rest of
// the configuration.
func (c *config) providerEnv() providers.Env {
	return providers.Env{
		Var: envName, Lease: c.Lease, DispatchTimeout: c.DispatchTimeout, StoreCalls: c.leaseStoreCalls(),
		SharedStore: c.Store == "postgres" || c.Store == "tiered",
		Retention:   c.Retention,
	}
}

// providerWarnings collects the warnings of every provider whose settings
// are a providers.Warner, in table order: serve logs them at start-up.
func (c *config) providerWarnings() []string {
	env := c.providerEnv()
	var out []string
	for _, p := range c.providers {
		if w, ok := p.settings.(providers.Warner); ok {
			out = append(out, w.Warnings(env)...)
		}
	}
	return out
}

// defaultStoreTimeout is the store timeout when the operator sets none:
// 5s, or less when the lease leaves less room beyond the forward, so that
// the store's two calls under the claim (leaseStoreCalls) always fit in it:
// 2 × (lease − dispatch)/3 < lease − dispatch. It is zero when the lease is
// not longer than the forward, which check refuses.
func defaultStoreTimeout(lease, dispatch time.Duration) time.Duration {
	if lease <= dispatch {
		return 0
	}
	return min(5*time.Second, (lease-dispatch)/3)
}

// leaseStoreCalls is the store's share of a lease: it starts as the claim
// takes effect, so the rest of the claim call, then the record of the
// answer (complete, fail or release), may each take up to StoreTimeout while
// it is held. A record that lands after the lease could follow a second
// node's forward.
func (c *config) leaseStoreCalls() time.Duration { return 2 * c.StoreTimeout }

// checkServe adds what only serve requires.
func (c *config) checkServe() error {
	if c.AdminAddr != "" && c.AdminToken == "" && loopbackAddr(c.AdminAddr) != nil {
		return fmt.Errorf("%s_ADMIN_TOKEN: required when %s_ADMIN_ADDR (%s) is not a loopback address: the admin listener shows every stored request and can delete and redrive events", envPrefix, envPrefix, c.AdminAddr)
	}
	if c.Config != "" {
		// The file names the destinations; load checks them.
		return nil
	}
	return c.checkDownstream()
}

// checkDownstream checks WEBHOOKD_DOWNSTREAM_URL, which serve and
// `keys redrive` forward to.
func (c *config) checkDownstream() error {
	if c.DownstreamURL == "" {
		return fmt.Errorf("%s_DOWNSTREAM_URL: required: the core service URL events are forwarded to", envPrefix)
	}
	u, err := url.Parse(c.DownstreamURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Redacted: the URL may carry a token.
		return fmt.Errorf("%s_DOWNSTREAM_URL: %q is not an absolute http(s) URL", envPrefix, dispatch.RedactURL(c.DownstreamURL))
	}
	return nil
}

// usageTemplate renders one settings struct's variables with envconfig's
// Usaget, in the columns of `webhookd help`.
var usageTemplate = template.Must(template.New("usage").Parse(
	`{{range .}}  {{.Key}}	{{.Tags.Get "default"}}	{{.Tags.Get "desc"}}
{{end}}`))

// usageVariables writes the table of variables for `webhookd help`:
// config's, then each provider's of table in order. envconfig renders
// tagged settings, so the names shown are the ones the envconfig package
// derives from the tags (TestEnvVarsAreEnvconfigs holds loadVars to the
// same names); a provider spec's variables are rendered from their values.
func usageVariables(tw *tabwriter.Writer, table []providers.Entry) error {
	specs := []any{&config{}}
	for _, e := range table {
		specs = append(specs, e.Settings())
	}
	for _, spec := range specs {
		if _, ok := spec.(providers.VariableLister); ok {
			for _, v := range envVars(spec) {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.key, v.def, v.desc)
			}
			continue
		}
		if err := envconfig.Usaget(envPrefix, spec, tw, usageTemplate); err != nil {
			return err
		}
	}
	return nil
}
