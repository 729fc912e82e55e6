package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/routing"
	"github.com/webhookd/webhookd/tracing"
)

// loadRouting is the sources, destinations and routes serve runs: the
// WEBHOOKD_CONFIG file's (file, else the variable's), or without one each
// provider the variables enable as a source named after it, forwarding to
// WEBHOOKD_DOWNSTREAM_URL as the destination "default".
//
// table is the provider table (userSpecs); nil reads it.
func loadRouting(cfg *config, table []providers.Entry, file string, environ []string) (*routing.Config, error) {
	if file == "" {
		reg, err := buildRegistry(cfg)
		if err != nil {
			return nil, err
		}
		var sources []routing.EnvSource
		for _, p := range cfg.providers {
			if a, ok := reg.Lookup(p.entry.Name); ok {
				sources = append(sources, routing.EnvSource{Entry: p.entry, Settings: p.settings, Provider: a})
			}
		}
		return routing.FromEnv(sources, routing.Destination{URL: cfg.DownstreamURL, Timeout: cfg.DispatchTimeout,
			Retries: cfg.DispatchRetries, FailedPolicy: cfg.FailedPolicy})
	}
	if table == nil {
		var err error
		if table, err = userSpecs(cfg.ProviderSpecs); err != nil {
			return nil, err
		}
	}
	return routing.Load(file, routing.Options{
		Table:         table,
		Environ:       environ,
		VarName:       envName,
		DownstreamVar: envName("DOWNSTREAM_URL"),
		Env:           cfg.providerEnv(),
		Defaults: routing.DestinationDefaults{Timeout: cfg.DispatchTimeout, Retries: cfg.DispatchRetries,
			FailedPolicy: cfg.FailedPolicy},
		CheckTimeout: cfg.checkForwardBudget,
	})
}

// checkForwardBudget is the lease rule for one destination's timeout:
// WEBHOOKD_LEASE must outlast the forward and the store calls around it.
func (c *config) checkForwardBudget(timeout time.Duration) error {
	if c.Lease <= timeout+c.leaseStoreCalls() {
		return fmt.Errorf("%s (%s) must be longer than this timeout (%s) plus twice %s (%s), or a slow forward could be taken over and sent twice",
			envName("LEASE"), c.Lease, timeout, envName("STORE_TIMEOUT"), c.StoreTimeout)
	}
	return nil
}

// router holds the routes in force and swaps them on a reload: each
// delivery reads them once, at its start (receiver.Config.Routing), so a
// delivery in flight finishes under the configuration it started with.
type router struct {
	cfg  *config
	file string
	log  *slog.Logger
	tr   *tracing.Tracing
	// environ is read for the warnings of variables a file ignores.
	environ func() []string
	// onLoad, if set, sees every configuration put in force.
	onLoad func(*routing.Config)
	// table is the provider table, read once: its specs are compiled and
	// their examples verified at start, not on every reload.
	table []providers.Entry

	mu      sync.Mutex // one reload at a time
	current atomic.Pointer[receiver.Routes]
	// forwarders are the forwarders of the configuration in force.
	forwarders []*dispatch.Forwarder
}

// newRouter loads the first configuration.
func newRouter(cfg *config, log *slog.Logger, tr *tracing.Tracing) (*router, error) {
	table, err := userSpecs(cfg.ProviderSpecs)
	if err != nil {
		return nil, err
	}
	rt := &router{cfg: cfg, file: cfg.Config, log: log, tr: tr, environ: os.Environ, table: table}
	if err := rt.load(); err != nil {
		return nil, err
	}
	return rt, nil
}

// Routes is the configuration in force.
func (rt *router) Routes() *receiver.Routes { return rt.current.Load() }

// load reads the configuration and puts it in force; on an error the
// running one stays.
func (rt *router) load() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	c, err := loadRouting(rt.cfg, rt.table, rt.file, rt.environ())
	if err != nil {
		return err
	}
	fwds := make(map[string]receiver.Forwarder, len(c.Destinations))
	var made []*dispatch.Forwarder
	for _, d := range c.Destinations {
		f, err := newDestinationForwarder(rt.cfg, d, rt.log, rt.tr)
		if err != nil {
			return fmt.Errorf("destination %s: %w", d.Name, err)
		}
		fwds[d.Name] = f
		made = append(made, f)
	}
	routes, err := receiver.NewRoutes(c, fwds)
	if err != nil {
		return err
	}
	if rt.onLoad != nil {
		rt.onLoad(c)
	}
	rt.current.Store(routes)
	// The old configuration's deliveries in flight keep their connections;
	// its idle ones are not needed any more.
	for _, f := range rt.forwarders {
		f.CloseIdleConnections()
	}
	rt.forwarders = made
	for _, w := range c.Warnings {
		rt.log.Warn(w)
	}
	return nil
}

// reload answers SIGHUP: the file again, or a log line saying why the
// running configuration stays.
func (rt *router) reload() {
	if rt.file == "" {
		rt.log.Info("SIGHUP ignored: without " + envName("CONFIG") + " there is nothing to reload")
		return
	}
	start := time.Now()
	if err := rt.load(); err != nil {
		rt.log.Error("reload failed: the running configuration stays", "file", rt.file, "error", err.Error())
		return
	}
	c := rt.Routes().Config
	rt.log.Info("configuration reloaded", "file", rt.file, "sources", len(c.Sources), "destinations", len(c.Destinations),
		"took", time.Since(start))
}

// closeIdle closes the idle connections of the forwarders in force.
func (rt *router) closeIdle() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, f := range rt.forwarders {
		f.CloseIdleConnections()
	}
}

// ProviderOf names the provider of a source of the configuration in force.
func (rt *router) ProviderOf(source string) string { return rt.Routes().Config.ProviderOf(source) }

// Forwarder is a destination's forwarder in the configuration in force
// (redrive).
func (rt *router) Forwarder(destination string) (receiver.Forwarder, bool) {
	f, ok := rt.Routes().Forwarders[destination]
	return f, ok
}

// onHangup calls reload on every SIGHUP until the returned stop is called.
func onHangup(reload func()) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				reload()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
