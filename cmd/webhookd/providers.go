package main

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/metrics"
	"github.com/webhookd/webhookd/providers"
	twoctwop "github.com/webhookd/webhookd/providers/2c2p"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/providers/braintree"
	"github.com/webhookd/webhookd/providers/doku"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/spec"
)

// providerTable is every provider built into webhookd, in the order help
// lists them: the Go adapters, one line each, then the specs embedded from
// providers/spec/builtin. Serve, replay, help and the unknown-variable
// check read it, with the operator's own specs added (addSpecs); adding a
// provider is its package under providers/ plus one line here
// (docs/adding-a-provider.md), or one spec file (docs/provider-specs.md).
func providerTable() []providers.Entry {
	specs, err := spec.Builtin()
	if err == nil {
		var table []providers.Entry
		if table, err = addSpecs(goProviders(), specs); err == nil {
			return table
		}
	}
	// The built-in specs are the binary's own, and TestBuiltinSpecs loads
	// every one: failing here is a broken build, not a configuration.
	panic(fmt.Sprintf("built-in provider specs: %v", err))
}

// goProviders is every provider written in Go, one line each.
func goProviders() []providers.Entry {
	return []providers.Entry{
		midtrans.Entry(),
		doku.Entry(),
		duitku.Entry(),
		paypal.Entry(),
		adyen.Entry(),
		braintree.Entry(),
		twoctwop.Entry(),
	}
}

// addSpecs appends each spec's entry to table, refusing a spec whose name
// or any of whose variables another provider (or webhookd itself) already
// has: its error is one line naming the spec's file.
func addSpecs(table []providers.Entry, specs []*spec.Spec) ([]providers.Entry, error) {
	owner := map[string]string{}
	for _, v := range envVars(&config{}) {
		owner[v.key] = "webhookd's own"
	}
	taken := map[string]bool{}
	for _, e := range table {
		taken[e.Name] = true
		for _, v := range envVars(e.Settings()) {
			owner[v.key] = "provider " + e.Name + "'s"
		}
	}
	for _, s := range specs {
		e := s.Entry()
		if err := metrics.CheckProviderName(e.Name); err != nil {
			return nil, fmt.Errorf("%s: name %w", s.File(), err)
		}
		if taken[e.Name] {
			return nil, fmt.Errorf("%s: name %q is already another provider's", s.File(), e.Name)
		}
		taken[e.Name] = true
		for _, v := range envVars(e.Settings()) {
			if o, clash := owner[v.key]; clash {
				return nil, fmt.Errorf("%s: variable %s is already %s", s.File(), v.key, o)
			}
			owner[v.key] = "provider " + e.Name + "'s"
		}
		table = append(table, e)
	}
	return table, nil
}

// userSpecs loads the specs of WEBHOOKD_PROVIDER_SPECS (none when path is
// empty) and adds them to the built-in table.
func userSpecs(path string) ([]providers.Entry, error) {
	table := providerTable()
	if path == "" {
		return table, nil
	}
	specs, err := spec.LoadPath(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envName("PROVIDER_SPECS"), err)
	}
	table, err = addSpecs(table, specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envName("PROVIDER_SPECS"), err)
	}
	return table, nil
}

// providerConfig is one table entry with its variables filled in.
type providerConfig struct {
	entry    providers.Entry
	settings providers.Settings
}

// loadProviders fills every table entry's settings from lookup.
func loadProviders(table []providers.Entry, lookup func(string) string) ([]providerConfig, error) {
	out := make([]providerConfig, 0, len(table))
	for _, e := range table {
		s := e.Settings()
		if err := loadVars(envVars(s), lookup); err != nil {
			return nil, err
		}
		out = append(out, providerConfig{entry: e, settings: s})
	}
	return out, nil
}

// buildRegistry registers the adapters the configuration enables.
func buildRegistry(cfg *config) (*providers.Registry, error) {
	var reg providers.Registry
	for _, p := range cfg.providers {
		a, err := p.settings.Build()
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue
		}
		if a.Name() != p.entry.Name {
			return nil, fmt.Errorf("provider table: entry %q builds an adapter named %q", p.entry.Name, a.Name())
		}
		if err := reg.Register(a); err != nil {
			return nil, err
		}
	}
	return &reg, nil
}

// entry returns the configuration's provider named name.
func (c *config) entry(name string) (providers.Entry, bool) {
	for _, p := range c.providers {
		if p.entry.Name == name {
			return p.entry, true
		}
	}
	return providers.Entry{}, false
}

// providerNames lists the configuration's providers as prose: "stripe,
// midtrans or xendit".
func (c *config) providerNames() string {
	var names []string
	for _, p := range c.providers {
		names = append(names, p.entry.Name)
	}
	return orList(names)
}

// secretVariables lists the variables that enable one of the
// configuration's providers (those of WEBHOOKD_PROVIDER_SPECS included),
// as prose.
func (c *config) secretVariables() string {
	var vars []string
	for _, p := range c.providers {
		vars = append(vars, envName(p.entry.Secret))
	}
	return orList(vars)
}

func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
