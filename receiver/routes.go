package receiver

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routes lists every route webhookd serves (docs/contract.md, "Routes").
func (h *handler) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(h.recoverer)
	r.Post("/webhooks/{provider}", h.receive)
	r.Get("/healthz", h.healthz)
	r.Get("/readyz", h.readyz)
	if h.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", h.Metrics)
	}
	return r
}

// healthz answers 200 while the process runs: liveness only.
func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 only when the store can be read and written.
func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), h.StoreTimeout)
		defer cancel()
		if err := h.Ready(ctx); err != nil {
			h.Logger.Warn("not ready", "error", err.Error())
			// The cause is logged; the route is public, like the provider's.
			writeError(w, http.StatusServiceUnavailable, ErrStoreUnavailable.Error())
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n"))
}
