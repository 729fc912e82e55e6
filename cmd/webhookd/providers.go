package main

import (
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/adyen"
	"github.com/webhookd/webhookd/providers/doku"
	"github.com/webhookd/webhookd/providers/duitku"
	"github.com/webhookd/webhookd/providers/midtrans"
	"github.com/webhookd/webhookd/providers/paddle"
	"github.com/webhookd/webhookd/providers/paypal"
	"github.com/webhookd/webhookd/providers/razorpay"
	"github.com/webhookd/webhookd/providers/standard"
	"github.com/webhookd/webhookd/providers/stripe"
	"github.com/webhookd/webhookd/providers/xendit"
)

// providerTable is every provider webhookd can serve, one line each, in the
// order help lists them. Serve, replay, help and the unknown-variable check
// read it; adding a provider is its package under providers/ plus one line
// here (docs/adding-a-provider.md).
func providerTable() []providers.Entry {
	return []providers.Entry{
		stripe.Entry(),
		midtrans.Entry(),
		xendit.Entry(),
		standard.Entry(),
		razorpay.Entry(),
		paddle.Entry(),
		doku.Entry(),
		duitku.Entry(),
		paypal.Entry(),
		adyen.Entry(),
	}
}

// providerConfig is one table entry with its variables filled in.
type providerConfig struct {
	entry    providers.Entry
	settings providers.Settings
}

// loadProviders fills every table entry's settings from lookup.
func loadProviders(lookup func(string) string) ([]providerConfig, error) {
	table := providerTable()
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

// providerEntry returns the table entry named name.
func providerEntry(name string) (providers.Entry, bool) {
	for _, e := range providerTable() {
		if e.Name == name {
			return e, true
		}
	}
	return providers.Entry{}, false
}

// providerNames lists the table's names as prose: "stripe, midtrans or
// xendit".
func providerNames() string {
	var names []string
	for _, e := range providerTable() {
		names = append(names, e.Name)
	}
	return orList(names)
}

// secretVariables lists the variables that enable a provider, as prose.
func secretVariables() string {
	var vars []string
	for _, e := range providerTable() {
		vars = append(vars, envName(e.Secret))
	}
	return orList(vars)
}

func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
