package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/webhookd/webhookd/admin"
	"github.com/webhookd/webhookd/capture"
	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/deliver"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/metrics"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/receiver"
	"github.com/webhookd/webhookd/redrive"
	"github.com/webhookd/webhookd/requestlog"
	"github.com/webhookd/webhookd/routing"
)

const serveUsage = `webhookd serve

Runs the receiver until SIGINT or SIGTERM. It takes no arguments: its
configuration is the WEBHOOKD_* variables that webhookd help lists.`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd serve", serveUsage, stderr)
	if code, ok := parseFlagsOnly(fs, args, stderr, "configuration comes from WEBHOOKD_* variables; see webhookd help"); !ok {
		return code
	}
	cfg, err := loadConfig()
	if err == nil {
		err = cfg.checkServe()
	}
	if err != nil {
		fmt.Fprintf(stderr, "webhookd: configuration: %v\n", err)
		return 2
	}
	log := newLogger(cfg, stderr)
	for _, w := range cfg.unknown {
		log.Warn(w)
	}
	// A provider left open to forged event statuses starts, but says so.
	for _, w := range cfg.providerWarnings() {
		log.Warn(w)
	}
	// Only serve runs long enough, and allocates enough, for the GC
	// settings to matter; the other subcommands keep Go's defaults.
	setGCFromEnv(log)
	if err := serve(ctx, cfg, log, nil); err != nil {
		log.Error("webhookd stopped", "error", err.Error())
		return 1
	}
	return 0
}

// noProviderWarning is what serve logs when no provider is enabled: the
// variables that would enable one, the operator's own specs' among them.
func noProviderWarning(cfg *config) string {
	return "no provider is configured: every /webhooks/ route answers 404; set " + cfg.secretVariables()
}

// serve runs the receiver until ctx is done. ready, if not nil, receives the
// listening address once requests are accepted (tests use it).
func serve(ctx context.Context, cfg *config, log *slog.Logger, ready chan<- string) error {
	tr, log, stopTracing, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	rt, err := newRouter(cfg, log, tr)
	if err != nil {
		return err
	}
	defer rt.closeIdle()
	// Every provider a reload could name is a bounded provider label.
	var providerNames []string
	for _, e := range rt.table {
		providerNames = append(providerNames, e.Name)
	}
	met, err := metrics.New(prometheus.NewRegistry(), metrics.Options{Providers: providerNames, Sources: map[string]string{}, Logger: log})
	if err != nil {
		return err
	}
	sources := func(c *routing.Config) map[string]string {
		m := map[string]string{}
		for _, s := range c.Sources {
			m[s.Name] = s.Entry.Name
		}
		return m
	}
	rc := rt.Routes().Config
	if err := met.SetSources(sources(rc)); err != nil {
		return err
	}

	var sourceNames []string
	for _, s := range rc.Sources {
		sourceNames = append(sourceNames, s.Name)
	}
	if len(rc.Sources) == 0 {
		log.Warn(noProviderWarning(cfg))
	}
	// The overview's figures are counted where the metrics are.
	ov := overview.NewRecorder(sourceNames, nil)
	// reqLog is set once the store is open, before anything is received.
	var reqLog *requestlog.Log
	rt.onLoad = func(c *routing.Config) {
		if err := met.SetSources(sources(c)); err != nil {
			log.Error("metrics: sources", "error", err.Error())
		}
		var names []string
		for _, s := range c.Sources {
			names = append(names, s.Name)
		}
		ov.SetProviders(names)
	}
	onDelivery := func(d receiver.Delivery) {
		met.ObserveDelivery(d)
		ov.Observe(d)
		reqLog.Observe(d)
	}
	storeOpts := storeOptions(cfg, log)
	storeOpts.OnCommit, storeOpts.OnPrune = met.ObserveCommit, met.ObservePrune
	store, err := openStore(ctx, cfg, storeOpts, lmdb.Open)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := met.WatchStore(store); err != nil {
		return err
	}
	requests, _ := store.(dedupe.RequestLog)
	if requests != nil {
		reqLog = requestlog.New(requests, requestlog.Options{
			Bounds: dedupe.RequestLogBounds{Size: cfg.RequestLogSize, Age: cfg.RequestLogAge},
			OnDrop: met.ObserveRequestLogDrop, Logger: log,
		})
		// Deferred after store.Close, so it runs first: what waits is
		// written before the store closes.
		defer reqLog.Close()
	}
	if err := met.WatchReady(store.Ping); err != nil {
		return err
	}
	if mr, ok := store.(metrics.MapReporter); ok {
		if err := met.WatchMap(mr); err != nil {
			return err
		}
	}
	qs, ok := store.(queueStore)
	if !ok {
		return fmt.Errorf("%s=%s: the store has no queue", envName("STORE"), cfg.Store)
	}
	watched := meteredDestinations(rc)
	names := make([]string, len(watched))
	for i, d := range watched {
		names[i] = d.Name
	}
	if err := met.WatchQueues(qs, watched); err != nil {
		return err
	}
	onAttempt, err := met.WatchAttempts(names)
	if err != nil {
		return err
	}
	tally := &attemptCounts{}
	load := receiver.NewLoad(busyDeliveries*runtime.GOMAXPROCS(0), nil)
	if err := met.WatchLoad(load); err != nil {
		return err
	}
	loops := &queueLoops{store: qs, rt: rt, log: log, busy: load.Busy,
		onAttempt: func(d, o string) { onAttempt(d, o); tally.observe(d, o) }}
	if err := loops.start(rc); err != nil {
		return err
	}
	defer loops.stop()
	onLoad := rt.onLoad
	rt.onLoad = func(c *routing.Config) {
		onLoad(c)
		// A reload's new destinations are metered from the next scrape.
		met.SetDestinations(meteredDestinations(c))
		if err := loops.start(c); err != nil {
			log.Error("the delivery loop of the reloaded configuration did not start", "error", err.Error())
		}
	}
	pauses := deliver.NewPauses(qs, deliver.DefaultPoll, nil)

	var captureHook func(provider, eventKey string, body []byte)
	if cfg.CaptureDir != "" {
		cw, err := capture.New(cfg.CaptureDir, log)
		if err != nil {
			return fmt.Errorf("WEBHOOKD_CAPTURE_DIR: %w", err)
		}
		captureHook = cw.Hook()
		log.Info("capturing verified deliveries", "dir", cw.Dir())
	}
	// base bounds every delivery's forward; it is cancelled when the
	// shutdown grace period runs out.
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	handler, err := receiver.New(receiver.Config{
		Capture:             captureHook,
		BaseContext:         base,
		Routing:             rt.Routes,
		Store:               store,
		Queue:               qs,
		Wake:                loops.wake,
		Paused:              pauses.Paused,
		Ready:               store.Ping,
		Metrics:             met.Handler(),
		MaxBodyBytes:        cfg.MaxBodyBytes,
		StoreTimeout:        cfg.StoreTimeout,
		MaxPendingBodyBytes: cfg.MaxPendingBodies,
		// A batch gets what one single-event request may take: Adyen
		// gives up on an answer after 10 s (docs/contract.md).
		BatchTimeout:  cfg.DispatchTimeout,
		FailedPolicy:  receiver.FailedPolicy(cfg.FailedPolicy),
		Logger:        log,
		OnDelivery:    onDelivery,
		StoreRequests: cfg.StoreRequests,
		Tracer:        tr.Tracer,
		Load:          load,
	})
	if err != nil {
		return err
	}
	var adminSrv *http.Server
	if cfg.AdminAddr != "" {
		if adminSrv, err = startAdmin(cfg, log, admin.Config{
			Store: store,
			Redriver: &redrive.Redriver{Store: store, Tracer: tr.Tracer, ProviderOf: rt.ProviderOf,
				ForwarderOf: func(d string) (redrive.Forwarder, bool) { return rt.Forwarder(d) }},
			ProviderOf: rt.ProviderOf,
			Token:      cfg.AdminToken,
			Metrics:    met.Handler(),
			Providers:  sourceNames,
			Logger:     log,
			Overview:   ov,
			Requests:   requests,
			Queue:      qs,
			Attempts:   tally.of,
			Destinations: func() []admin.Destination {
				return adminDestinations(rt.Routes().Config)
			},
		}); err != nil {
			return err
		}
		defer adminSrv.Close()
	}

	srv := newServer(handler, log, answerAfterForward(cfg))
	if cfg.PprofAddr != "" {
		stopPprof, err := startPprof(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("WEBHOOKD_ADDR: %w", err)
	}
	var dests []string
	for _, d := range rc.Destinations {
		dests = append(dests, d.Name+"="+dispatch.RedactURL(d.URL))
	}
	log.Info("webhookd listening", "addr", ln.Addr().String(), "sources", sourceNames,
		"store", cfg.Store, "data_dir", dataDirLog(cfg), "destinations", dests, "signed", len(cfg.DownstreamSecrets) > 0,
		"config", cfg.Config)
	stopHUP := onHangup(rt.reload)
	defer stopHUP()
	if ready != nil {
		ready <- ln.Addr().String()
	}

	if err := serveUntilDone(ctx, srv, ln); err != nil {
		return err
	}
	// The admin listener drains beside the main one: its redrives are
	// bounded by the dispatch timeout and get the deliveries' grace period
	// to finish. serve waits for both; the deferred Close only ends what
	// outlived that grace.
	adminDone := make(chan struct{})
	go func() {
		defer close(adminDone)
		if adminSrv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+drainMargin)
		defer cancel()
		_ = adminSrv.Shutdown(ctx)
	}()
	err = shutdown(srv, cfg.ShutdownGrace, cancelBase, log)
	<-adminDone
	return err
}

// startAdmin listens on WEBHOOKD_ADMIN_ADDR and serves the admin listener
// (package admin) until the returned server is shut down.
func startAdmin(cfg *config, log *slog.Logger, acfg admin.Config) (*http.Server, error) {
	h, err := admin.New(acfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		return nil, fmt.Errorf("%s_ADMIN_ADDR: %w", envPrefix, err)
	}
	srv := newServer(h, log, answerAfterForward(cfg))
	log.Info("admin listening", "addr", ln.Addr().String(), "token", cfg.AdminToken != "", "store_requests", cfg.StoreRequests)
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("admin listener stopped", "error", err.Error())
		}
	}()
	return srv, nil
}

// drainMargin is how long deliveries get, once their forwards are cut off,
// to release their keys and answer 503: store writes, no network.
const drainMargin = 5 * time.Second

// serveUntilDone serves srv on ln until it fails, with its error, or until
// ctx is done, with nil and srv still serving: the caller then shuts it down
// its own way (serve drains deliveries, the sink just stops).
func serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
}

// shutdown stops accepting connections and waits for in-flight deliveries.
// Each may keep forwarding for up to grace; then cancelBase cuts the rest
// off, and they release their keys and answer the provider 503. It returns
// nil once every delivery has been answered, which is an exit 0 even if
// some were cut off: their providers will retry.
func shutdown(srv *http.Server, grace time.Duration, cancelBase context.CancelFunc, log *slog.Logger) error {
	log.Info("shutting down: draining in-flight deliveries", "grace", grace)
	cutoff := time.AfterFunc(grace, func() {
		log.Warn("shutdown grace period over: cancelling in-flight forwards; their keys are released and the providers answered 503")
		cancelBase()
	})
	defer cutoff.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), grace+drainMargin)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: deliveries still running %s after the grace period: %w", drainMargin, err)
	}
	log.Info("webhookd stopped")
	return nil
}

// dataDirLog is the data directory for the start-up line, or "-" for the
// postgres store, which keeps nothing there.
func dataDirLog(cfg *config) string {
	if cfg.Store == "postgres" {
		return "-"
	}
	return cfg.DataDir
}

// meteredDestinations are c's destinations as the queue metrics show them.
func meteredDestinations(c *routing.Config) []metrics.Destination {
	out := make([]metrics.Destination, 0, len(c.Destinations))
	for _, d := range c.Destinations {
		out = append(out, metrics.Destination{Name: d.Name, Queue: d.Delivery == routing.Queue, MaxAge: d.MaxAge})
	}
	return out
}
