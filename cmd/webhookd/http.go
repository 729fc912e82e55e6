package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/routing"
	"github.com/webhookd/webhookd/tracing"
)

// newServer is the one http.Server every listener of webhookd uses (the
// receiver, the admin listener, pprof, the sink), so that each has the
// same bounds on slow or oversized requests. writeTimeout bounds writing
// an answer; zero leaves it unbounded, for pprof's profiles that stream
// for as long as they are asked to. A nil log keeps net/http's default
// error log (the sink's, which prints to stderr anyway).
func newServer(h http.Handler, log *slog.Logger, writeTimeout time.Duration) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	if log != nil {
		srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	return srv
}

// answerAfterForward is the write timeout of a listener whose answers wait
// for a forward (the receiver's deliveries, the admin listener's
// redrives): the whole dispatch budget, and time to write the answer.
func answerAfterForward(cfg *config) time.Duration {
	return cfg.DispatchTimeout + 30*time.Second
}

// newForwarder is the one forwarder of serve and keys redrive, built from
// the same variables and traced alike, so a redrive from the command line
// is forwarded as serve forwards. log may be nil (keys redrive logs
// nothing).
func newForwarder(cfg *config, log *slog.Logger, tr *tracing.Tracing) (*dispatch.Forwarder, error) {
	return newDestinationForwarder(cfg, &routing.Destination{URL: cfg.DownstreamURL, Timeout: cfg.DispatchTimeout, Retries: cfg.DispatchRetries}, log, tr)
}

// newDestinationForwarder is the forwarder of one destination: its URL,
// budget, retries and headers, with the process's signing secrets and
// tracing.
func newDestinationForwarder(cfg *config, d *routing.Destination, log *slog.Logger, tr *tracing.Tracing) (*dispatch.Forwarder, error) {
	return dispatch.New(dispatch.Options{
		URL:            d.URL,
		Timeout:        d.Timeout,
		Retries:        d.Retries,
		Headers:        d.Headers,
		Logger:         log,
		SigningSecrets: cfg.DownstreamSecrets,
		Tracer:         tr.Tracer,
		Propagator:     tr.Propagator,
	})
}
