package routing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
)

// MaxFileBytes bounds a WEBHOOKD_CONFIG file.
const MaxFileBytes = 1 << 20

// The defaults of a queue destination (docs/contract.md, "Store and
// forward"): how long webhookd keeps trying, and how many attempts it
// keeps open at once.
const (
	DefaultMaxAge      = 72 * time.Hour
	DefaultConcurrency = 16
)

// Options are what Load needs besides the file.
type Options struct {
	// Table is every provider a source may name (built in and specs).
	Table []providers.Entry
	// LookupEnv reads the environment for ${NAME}; os.LookupEnv if nil.
	LookupEnv func(string) (string, bool)
	// Environ (KEY=VALUE) is checked for provider variables and
	// WEBHOOKD_DOWNSTREAM_URL that are set but that the file does not
	// name: each is a warning. Values are never read from it.
	Environ []string
	// VarName turns a provider's tagged variable (STRIPE_SECRETS) into the
	// name the operator sets (WEBHOOKD_STRIPE_SECRETS).
	VarName func(tagged string) string
	// DownstreamVar is WEBHOOKD_DOWNSTREAM_URL's name, for the warning.
	DownstreamVar string
	// Env is what a provider's Check needs; its DispatchTimeout is set to
	// the longest timeout of the destinations the source's routes reach,
	// and its Var to name the file's setting.
	Env providers.Env
	// Defaults fill a destination's unset values.
	Defaults DestinationDefaults
	// CheckTimeout, if set, holds each destination's timeout to the lease
	// rule (WEBHOOKD_LEASE longer than a forward's budget).
	CheckTimeout func(time.Duration) error
}

// Load reads and decodes the file at name (see Parse), warning when it
// holds secrets in clear while group or others may read it.
func Load(name string, o Options) (*Config, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Parse(name, data, info.Mode().Perm(), o)
}

// Parse decodes data, the file name with permissions perm, strictly: every
// error is one line, "<file>:<line>: <key>: <what>".
func Parse(name string, data []byte, perm fs.FileMode, o Options) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxFileBytes)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.VarName == nil {
		o.VarName = func(s string) string { return s }
	}
	d := &decoder{file: name, o: o, used: map[string]bool{}}
	c, err := d.decode(data)
	if err != nil {
		return nil, err
	}
	if d.clear && perm&0o077 != 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s holds secrets in clear and is readable by group or others (mode %04o): chmod 600 it, or take the secrets from ${...}", name, perm))
	}
	c.Warnings = append(c.Warnings, d.ignored()...)
	return c, nil
}

type decoder struct {
	file string
	o    Options
	// used are the environment variables ${...} read; clear says a
	// secret is written in the file itself.
	used  map[string]bool
	clear bool
}

// errAt is the one shape of Load's errors.
func (d *decoder) errAt(n *yaml.Node, key, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", d.file, n.Line, key, fmt.Sprintf(format, args...))
}

func (d *decoder) decode(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file", d.file)
		}
		return nil, fmt.Errorf("%s: %v", d.file, err)
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: one YAML document only", d.file)
	}
	if err := noAliases(&doc); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", d.file, err.(lineError).line, err)
	}
	root := doc.Content[0]
	top, err := d.mapping(root, "", "version", "sources", "destinations", "routes")
	if err != nil {
		return nil, err
	}
	if v, ok := top["version"]; ok {
		if v.Kind != yaml.ScalarNode || v.Value != "1" {
			return nil, d.errAt(v, "version", "must be 1")
		}
	}
	c := &Config{File: d.file}
	if c.Destinations, err = d.destinations(top["destinations"]); err != nil {
		return nil, err
	}
	if c.Sources, err = d.sources(top["sources"], top["sources"] == nil, root); err != nil {
		return nil, err
	}
	c.index()
	if c.Routes, err = d.routes(top["routes"], c, root); err != nil {
		return nil, err
	}
	if err := d.build(c); err != nil {
		return nil, err
	}
	return c, nil
}

type lineError struct {
	line int
	msg  string
}

func (e lineError) Error() string { return e.msg }

// noAliases refuses anchors' aliases: a file's decoded size stays its own.
func noAliases(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return lineError{n.Line, "YAML aliases are not allowed"}
	}
	for _, c := range n.Content {
		if err := noAliases(c); err != nil {
			return err
		}
	}
	return nil
}

// mapping reads n as a mapping whose keys are among known (any key when
// known is empty), refusing a key given twice.
func (d *decoder) mapping(n *yaml.Node, key string, known ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, d.errAt(n, orTop(key), "must be a mapping")
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, d.errAt(k, orTop(key), "keys must be scalars")
		}
		name := join(key, k.Value)
		if len(known) > 0 && !slices.Contains(known, k.Value) {
			return nil, d.errAt(k, name, "unknown key (want %s)", strings.Join(known, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, d.errAt(k, name, "given twice")
		}
		out[k.Value] = v
	}
	return out, nil
}

func orTop(key string) string {
	if key == "" {
		return "(top level)"
	}
	return key
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func index(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

// sequence reads n as a sequence (a missing n is empty).
func (d *decoder) sequence(n *yaml.Node, key string) ([]*yaml.Node, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, d.errAt(n, key, "must be a list")
	}
	return n.Content, nil
}

// scalar reads n as a scalar with ${...} expanded; vars collects the
// names read, and literal reports text written in the file itself.
func (d *decoder) scalar(n *yaml.Node, key string, vars *[]string) (value string, literal bool, err error) {
	if n.Kind != yaml.ScalarNode {
		return "", false, d.errAt(n, key, "must be a single value")
	}
	if n.Tag == "!!null" {
		return "", false, nil
	}
	v, names, literal, err := expand(n.Value, d.o.LookupEnv)
	if err != nil {
		return "", false, d.errAt(n, key, "%v", err)
	}
	for _, name := range names {
		d.used[name] = true
		if vars != nil && !slices.Contains(*vars, name) {
			*vars = append(*vars, name)
		}
	}
	return v, literal, nil
}

// name reads a source's or destination's name.
func (d *decoder) name(n map[string]*yaml.Node, parent *yaml.Node, key string) (string, *yaml.Node, error) {
	v, ok := n["name"]
	if !ok {
		return "", nil, d.errAt(parent, join(key, "name"), "required")
	}
	s, _, err := d.scalar(v, join(key, "name"), nil)
	if err != nil {
		return "", nil, err
	}
	if !dedupe.ValidName(s) {
		return "", nil, d.errAt(v, join(key, "name"), "%q is not [a-z0-9][a-z0-9-]{0,62}", s)
	}
	return s, v, nil
}

func (d *decoder) destinations(n *yaml.Node) ([]*Destination, error) {
	items, err := d.sequence(n, "destinations")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*Destination
	for i, item := range items {
		key := index("destinations", i)
		m, err := d.mapping(item, key, "name", "url", "delivery", "timeout", "retries", "failed_policy", "headers",
			"max_age", "rate", "concurrency")
		if err != nil {
			return nil, err
		}
		dst := &Destination{Delivery: Sync, Timeout: d.o.Defaults.Timeout, Retries: d.o.Defaults.Retries,
			FailedPolicy: d.o.Defaults.FailedPolicy, Headers: http.Header{}, MaxAge: 72 * time.Hour, Concurrency: 16}
		var nameNode *yaml.Node
		if dst.Name, nameNode, err = d.name(m, item, key); err != nil {
			return nil, err
		}
		if seen[dst.Name] {
			return nil, d.errAt(nameNode, join(key, "name"), "destination %q is named twice", dst.Name)
		}
		seen[dst.Name] = true
		if err := d.destination(dst, m, item, key); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return out, nil
}

func (d *decoder) destination(dst *Destination, m map[string]*yaml.Node, item *yaml.Node, key string) error {
	str := func(name string) (string, *yaml.Node, error) {
		n, ok := m[name]
		if !ok {
			return "", nil, nil
		}
		s, _, err := d.scalar(n, join(key, name), &dst.Variables)
		return s, n, err
	}
	u, un, err := str("url")
	if err != nil {
		return err
	}
	if un == nil {
		return d.errAt(item, join(key, "url"), "required")
	}
	if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return d.errAt(un, join(key, "url"), "not an absolute http(s) URL")
	}
	dst.URL = u
	if s, n, err := str("delivery"); err != nil {
		return err
	} else if n != nil {
		switch Delivery(s) {
		case Sync, Queue:
			dst.Delivery = Delivery(s)
		default:
			return d.errAt(n, join(key, "delivery"), "%q is not sync or queue", s)
		}
	}
	queueOnly := func(name string) error {
		if n, ok := m[name]; ok && dst.Delivery != Queue {
			return d.errAt(n, join(key, name), "only for delivery: queue")
		}
		return nil
	}
	if s, n, err := str("timeout"); err != nil {
		return err
	} else if n != nil {
		if dst.Timeout, err = positiveDuration(s); err != nil {
			return d.errAt(n, join(key, "timeout"), "%v", err)
		}
	}
	if s, n, err := str("retries"); err != nil {
		return err
	} else if n != nil {
		if dst.Delivery == Queue {
			return d.errAt(n, join(key, "retries"), "only for delivery: sync (a queue retries until max_age)")
		}
		if dst.Retries, err = strconv.Atoi(s); err != nil || dst.Retries < 0 {
			return d.errAt(n, join(key, "retries"), "%q is not a whole number of 0 or more", s)
		}
	}
	if s, n, err := str("failed_policy"); err != nil {
		return err
	} else if n != nil {
		if s != "replay" && s != "retry" {
			return d.errAt(n, join(key, "failed_policy"), "%q is not replay or retry", s)
		}
		dst.FailedPolicy = s
	}
	if hn, ok := m["headers"]; ok {
		if err := d.headers(dst, hn, join(key, "headers")); err != nil {
			return err
		}
	}
	for _, name := range []string{"max_age", "rate", "concurrency"} {
		if err := queueOnly(name); err != nil {
			return err
		}
	}
	if s, n, err := str("max_age"); err != nil {
		return err
	} else if n != nil {
		if dst.MaxAge, err = positiveDuration(s); err != nil {
			return d.errAt(n, join(key, "max_age"), "%v", err)
		}
	}
	if s, n, err := str("rate"); err != nil {
		return err
	} else if n != nil {
		if dst.Rate, err = strconv.ParseFloat(s, 64); err != nil || !(dst.Rate > 0) {
			return d.errAt(n, join(key, "rate"), "%q is not a positive number of attempts a second", s)
		}
	}
	if s, n, err := str("concurrency"); err != nil {
		return err
	} else if n != nil {
		if dst.Concurrency, err = strconv.Atoi(s); err != nil || dst.Concurrency < 1 {
			return d.errAt(n, join(key, "concurrency"), "%q is not a whole number of 1 or more", s)
		}
	}
	if dst.Delivery == Queue {
		if err := d.queueDefaults(dst, m, key); err != nil {
			return err
		}
	}
	if d.o.CheckTimeout != nil {
		at := item
		if n, ok := m["timeout"]; ok {
			at = n
		}
		if err := d.o.CheckTimeout(dst.Timeout); err != nil {
			return d.errAt(at, join(key, "timeout"), "%v", err)
		}
	}
	return nil
}

// queueDefaults fills a queue destination's unset bounds and refuses a
// max_age no longer than the lease: an attempt holds the lease, so such a
// queue could expire an event during its first attempt.
func (d *decoder) queueDefaults(dst *Destination, m map[string]*yaml.Node, key string) error {
	if dst.MaxAge == 0 {
		dst.MaxAge = DefaultMaxAge
	}
	if dst.Concurrency == 0 {
		dst.Concurrency = DefaultConcurrency
	}
	// One attempt is one request: the loop's backoff spaces the retries
	// (package deliver).
	dst.Retries = 0
	if lease := d.o.Env.Lease; lease > 0 && dst.MaxAge <= lease {
		at, k := m["delivery"], join(key, "delivery")
		if n, ok := m["max_age"]; ok {
			at, k = n, join(key, "max_age")
		}
		return d.errAt(at, k, "%s is not longer than the lease (%s) that an attempt holds", dst.MaxAge, lease)
	}
	return nil
}

// reservedHeaders are the headers webhookd sets on a forward itself
// (dispatch.Request.SetHeaders, the signature, the trace context) or that
// belong to the connection: a destination may not set them.
var reservedHeaders = []string{"Content-Type", "Content-Length", "User-Agent", "Idempotency-Key", "Webhook-Source",
	"Webhook-Provider", "Webhook-Event-Id", "Webhook-Event-Type", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature",
	"Traceparent", "Tracestate", "Host", "Connection", "Transfer-Encoding", "Te", "Trailer", "Upgrade", "Keep-Alive",
	"Proxy-Connection", "Proxy-Authorization"}

func (d *decoder) headers(dst *Destination, n *yaml.Node, key string) error {
	m, err := d.mapping(n, key)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := m[k]
		hk := join(key, k)
		if !validHeaderName(k) {
			return d.errAt(v, hk, "not a header name")
		}
		canon := textproto.CanonicalMIMEHeaderKey(k)
		if slices.Contains(reservedHeaders, canon) {
			return d.errAt(v, hk, "webhookd sets this header itself")
		}
		if dst.Headers.Get(canon) != "" {
			return d.errAt(v, hk, "given twice")
		}
		s, literal, err := d.scalar(v, hk, &dst.Variables)
		if err != nil {
			return err
		}
		if strings.ContainsAny(s, "\r\n\x00") {
			return d.errAt(v, hk, "a header value holds a line break")
		}
		// Any header may carry a credential: one written in the file is a
		// secret in clear.
		d.clear = d.clear || literal
		dst.Headers.Set(canon, s)
	}
	return nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func positiveDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (10s, 5m)", s)
	}
	return v, nil
}

// sourceSetting is one of a source's settings as the file writes it.
type sourceSetting struct {
	node  *yaml.Node
	value string
}

func (d *decoder) sources(n *yaml.Node, missing bool, root *yaml.Node) ([]*Source, error) {
	items, err := d.sequence(n, "sources")
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		at := root
		if !missing {
			at = n
		}
		return nil, d.errAt(at, "sources", "at least one source is required")
	}
	byName := map[string]providers.Entry{}
	for _, e := range d.o.Table {
		byName[e.Name] = e
	}
	seen := map[string]bool{}
	var out []*Source
	for i, item := range items {
		key := index("sources", i)
		m, err := d.mapping(item, key, "name", "provider", "settings")
		if err != nil {
			return nil, err
		}
		name, nameNode, err := d.name(m, item, key)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, d.errAt(nameNode, join(key, "name"), "source %q is named twice", name)
		}
		seen[name] = true
		pn, ok := m["provider"]
		if !ok {
			return nil, d.errAt(item, join(key, "provider"), "required")
		}
		pname, _, err := d.scalar(pn, join(key, "provider"), nil)
		if err != nil {
			return nil, err
		}
		e, ok := byName[pname]
		if !ok {
			return nil, d.errAt(pn, join(key, "provider"), "no provider %q (webhookd providers lists them)", pname)
		}
		switch other, isProvider := byName[name]; {
		case name == "unknown":
			return nil, d.errAt(nameNode, join(key, "name"), "\"unknown\" is the label of requests to no source")
		case isProvider && other.Name != e.Name:
			return nil, d.errAt(nameNode, join(key, "name"), "%q is provider %s's route; a source may take only its own provider's name", name, other.Name)
		}
		src := &Source{Name: name, Entry: e}
		if err := d.settings(src, m["settings"], item, join(key, "settings")); err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}

// settingName is a provider variable's name in a file: without the
// provider's prefix, lower case (STRIPE_SECRETS: secrets).
func settingName(e providers.Entry, variable string) string {
	prefix := strings.ToUpper(strings.ReplaceAll(e.Name, "-", "_")) + "_"
	return strings.ToLower(strings.TrimPrefix(variable, prefix))
}

// settings reads a source's settings through the provider's own variables
// (providers.VariablesOf): the same defaults, parsing and checks as the
// environment's.
func (d *decoder) settings(src *Source, n *yaml.Node, item *yaml.Node, key string) error {
	s := src.Entry.Settings()
	vars := providers.VariablesOf(s)
	byName := map[string]providers.Variable{}
	var names []string
	for _, v := range vars {
		sn := settingName(src.Entry, v.Name)
		byName[sn] = v
		names = append(names, sn)
	}
	given := map[string]sourceSetting{}
	if n != nil {
		m, err := d.mapping(n, key)
		if err != nil {
			return err
		}
		for k, vn := range m {
			sk := join(key, k)
			v, ok := byName[k]
			if !ok {
				return d.errAt(vn, sk, "provider %s has no setting %q; did you mean %s? (webhookd providers lists them)",
					src.Entry.Name, k, providers.Nearest(k, names))
			}
			value, literal, err := d.settingValue(vn, sk, v, &src.Variables)
			if err != nil {
				return err
			}
			if literal && providers.IsSecretVariable(src.Entry, v) {
				d.clear = true
			}
			given[k] = sourceSetting{node: vn, value: value}
		}
	}
	// Errors name the file's setting: its own line when it is written,
	// else the source's.
	where := func(v providers.Variable) string {
		sn := settingName(src.Entry, v.Name)
		at := item
		if g, ok := given[sn]; ok {
			at = g.node
		}
		return fmt.Sprintf("%s:%d: %s", d.file, at.Line, join(key, sn))
	}
	lookup := func(name string) string { return given[settingName(src.Entry, name)].value }
	if err := providers.LoadVariables(vars, lookup, where); err != nil {
		return err
	}
	src.Settings = s
	src.where = func(tagged string) string {
		for _, v := range vars {
			if v.Name == tagged {
				return where(v)
			}
		}
		return fmt.Sprintf("%s:%d: %s", d.file, item.Line, join(key, settingName(src.Entry, tagged)))
	}
	return nil
}

// settingValue reads a setting: a scalar, or a list where the variable is
// one (joined as the variable would be written).
func (d *decoder) settingValue(n *yaml.Node, key string, v providers.Variable, vars *[]string) (string, bool, error) {
	if n.Kind != yaml.SequenceNode {
		return d.scalar(n, key, vars)
	}
	if !v.List {
		return "", false, d.errAt(n, key, "takes one value, not a list")
	}
	var items []string
	literal := false
	for i, it := range n.Content {
		s, lit, err := d.scalar(it, index(key, i), vars)
		if err != nil {
			return "", false, err
		}
		if s == "" || strings.Contains(s, ",") {
			return "", false, d.errAt(it, index(key, i), "a list item must be non-empty and hold no comma")
		}
		literal = literal || lit
		items = append(items, s)
	}
	return strings.Join(items, ","), literal, nil
}

func (d *decoder) routes(n *yaml.Node, c *Config, root *yaml.Node) ([]Route, error) {
	items, err := d.sequence(n, "routes")
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		at := root
		if n != nil {
			at = n
		}
		return nil, d.errAt(at, "routes", "at least one route is required (an event no route matches is forwarded nowhere)")
	}
	var out []Route
	for i, item := range items {
		key := index("routes", i)
		m, err := d.mapping(item, key, "source", "types", "where", "to")
		if err != nil {
			return nil, err
		}
		r := Route{Source: AnySource}
		if sn, ok := m["source"]; ok {
			if r.Source, _, err = d.scalar(sn, join(key, "source"), nil); err != nil {
				return nil, err
			}
			if _, ok := c.Source(r.Source); !ok && r.Source != AnySource {
				return nil, d.errAt(sn, join(key, "source"), "no source %q", r.Source)
			}
		}
		types, err := d.sequence(m["types"], join(key, "types"))
		if err != nil {
			return nil, err
		}
		for j, tn := range types {
			g, _, err := d.scalar(tn, index(join(key, "types"), j), nil)
			if err != nil {
				return nil, err
			}
			if _, err := path.Match(g, ""); err != nil || g == "" {
				return nil, d.errAt(tn, index(join(key, "types"), j), "%q is not a glob", g)
			}
			r.Types = append(r.Types, g)
		}
		if wn, ok := m["where"]; ok {
			if r.Where, err = d.where(wn, join(key, "where")); err != nil {
				return nil, err
			}
		}
		if err := d.reach(c, &r, m, key); err != nil {
			return nil, err
		}
		to, err := d.sequence(m["to"], join(key, "to"))
		if err != nil {
			return nil, err
		}
		if len(to) == 0 {
			return nil, d.errAt(item, join(key, "to"), "at least one destination is required")
		}
		for j, tn := range to {
			name, _, err := d.scalar(tn, index(join(key, "to"), j), nil)
			if err != nil {
				return nil, err
			}
			if _, ok := c.Destination(name); !ok {
				return nil, d.errAt(tn, index(join(key, "to"), j), "no destination %q", name)
			}
			if !slices.Contains(r.To, name) {
				r.To = append(r.To, name)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func (d *decoder) where(n *yaml.Node, key string) ([]Condition, error) {
	m, err := d.mapping(n, key)
	if err != nil {
		return nil, err
	}
	var out []Condition
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		ck := join(key, k)
		if !validPath(k) {
			return nil, d.errAt(n.Content[i], ck, "not a dotted path of field names")
		}
		v, _, err := d.scalar(m[k], ck, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, Condition{Path: k, Value: v})
	}
	if len(out) == 0 {
		return nil, d.errAt(n, key, "at least one condition is required")
	}
	return out, nil
}

func validPath(p string) bool {
	for _, name := range strings.Split(p, ".") {
		if name == "" {
			return false
		}
	}
	return true
}

// reach refuses a route whose where or types could read what the
// gateway does not sign, on any source the route reaches.
func (d *decoder) reach(c *Config, r *Route, m map[string]*yaml.Node, key string) error {
	for _, src := range c.Sources {
		if r.Source != AnySource && r.Source != src.Name {
			continue
		}
		if len(r.Where) > 0 && !src.Entry.SignedBody {
			return d.errAt(m["where"], join(key, "where"), "source %s's provider %s does not sign the whole body: a where could route on unsigned data (docs/routing.md)",
				src.Name, src.Entry.Name)
		}
		if len(r.Types) > 0 && !typeSigned(src) {
			return d.errAt(m["types"], join(key, "types"), "source %s's provider %s does not sign the event type: types could route on unsigned data (docs/routing.md)",
				src.Name, src.Entry.Name)
		}
	}
	return nil
}

// typeSigned reports whether src's event type may be routed on: signed,
// or confirmed as its settings say (providers.TypeConfirmer).
func typeSigned(src *Source) bool {
	if c, ok := src.Settings.(providers.TypeConfirmer); ok && !c.TypesConfirmed() {
		return false
	}
	return src.Entry.SignedType
}

// build checks and builds every source's adapter, with the longest
// timeout of the destinations its routes reach as the forward's budget.
func (d *decoder) build(c *Config) error {
	for _, src := range c.Sources {
		env := d.o.Env
		env.Var = src.where
		for _, name := range c.DestinationsOf(src) {
			env.DispatchTimeout = max(env.DispatchTimeout, c.destinations[name].Timeout)
		}
		if err := src.Settings.Check(env); err != nil {
			return err
		}
		p, err := src.Settings.Build()
		if err != nil {
			return fmt.Errorf("%s: %w", src.where(src.Entry.Secret), err)
		}
		if p == nil {
			return fmt.Errorf("%s: required: provider %s's %s", src.where(src.Entry.Secret), src.Entry.Name, src.Entry.SecretNoun)
		}
		src.Provider = p
		if w, ok := src.Settings.(providers.Warner); ok {
			for _, msg := range w.Warnings(env) {
				c.Warnings = append(c.Warnings, msg)
			}
		}
	}
	return nil
}

// ignored warns of each provider variable, and WEBHOOKD_DOWNSTREAM_URL,
// that is set but that the file does not read.
func (d *decoder) ignored() []string {
	known := map[string]bool{}
	if d.o.DownstreamVar != "" {
		known[d.o.DownstreamVar] = true
	}
	for _, e := range d.o.Table {
		for _, v := range providers.VariablesOf(e.Settings()) {
			known[d.o.VarName(v.Name)] = true
		}
	}
	var out []string
	for _, kv := range d.o.Environ {
		k, v, _ := strings.Cut(kv, "=")
		if known[k] && v != "" && !d.used[k] {
			out = append(out, fmt.Sprintf("%s is set but %s does not name it (${%s}): it is ignored", k, d.file, k))
		}
	}
	sort.Strings(out)
	return out
}
