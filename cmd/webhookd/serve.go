package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/stripe"
	"github.com/webhookd/webhookd/receiver"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "webhookd serve: unexpected arguments %q (configuration comes from WEBHOOKD_* variables; see webhookd help)\n", args)
		return 2
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
	if err := serve(ctx, cfg, log, nil); err != nil {
		log.Error("webhookd stopped", "error", err.Error())
		return 1
	}
	return 0
}

// buildRegistry registers the adapters the configuration enables.
func buildRegistry(cfg *config) (*providers.Registry, error) {
	var reg providers.Registry
	if len(cfg.StripeSecrets) > 0 {
		a, err := stripe.New(cfg.StripeSecrets, cfg.StripeTolerance)
		if err != nil {
			return nil, err
		}
		if err := reg.Register(a); err != nil {
			return nil, err
		}
	}
	return &reg, nil
}

// serve runs the receiver until ctx is done. ready, if not nil, receives the
// listening address once requests are accepted (tests use it).
func serve(ctx context.Context, cfg *config, log *slog.Logger, ready chan<- string) error {
	reg, err := buildRegistry(cfg)
	if err != nil {
		return err
	}
	if len(reg.Names()) == 0 {
		log.Warn("no provider is configured: every /webhooks/ route answers 404; set WEBHOOKD_STRIPE_SECRETS, WEBHOOKD_MIDTRANS_SERVER_KEY or WEBHOOKD_XENDIT_CALLBACK_TOKENS")
	}
	store, err := dedupe.Open(cfg.DataDir, storeOptions(cfg, log))
	if err != nil {
		return err
	}
	defer store.Close()

	fwd, err := dispatch.New(dispatch.Options{
		URL:     cfg.DownstreamURL,
		Timeout: cfg.DispatchTimeout,
		Retries: cfg.DispatchRetries,
		Logger:  log,
	})
	if err != nil {
		return err
	}
	handler, err := receiver.New(receiver.Config{
		Providers:    reg,
		Store:        store,
		Forwarder:    fwd,
		Ready:        store.Ping,
		MaxBodyBytes: cfg.MaxBodyBytes,
		FailedPolicy: receiver.FailedPolicy(cfg.FailedPolicy),
		Logger:       log,
	})
	if err != nil {
		return err
	}

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// The answer waits for the forward, so writing may take the whole
		// dispatch budget.
		WriteTimeout:   cfg.DispatchTimeout + 30*time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("WEBHOOKD_ADDR: %w", err)
	}
	log.Info("webhookd listening", "addr", ln.Addr().String(), "providers", reg.Names(),
		"store", cfg.Store, "data_dir", cfg.DataDir, "downstream", fwd.URL())
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Stop accepting; let in-flight deliveries finish their forward and
	// record it. They are bounded by the dispatch timeout.
	log.Info("shutting down: draining in-flight deliveries")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.DispatchTimeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	log.Info("webhookd stopped")
	return nil
}
