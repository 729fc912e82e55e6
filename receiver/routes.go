package receiver

import (
	"context"
	"net/http"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/webhookd/webhookd/providers"
)

// routes lists every route webhookd serves (docs/contract.md, "Routes").
func (h *handler) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(h.recoverer)
	r.Post("/webhooks/{provider}", h.receive)
	// A SNAP sender appends a service path to the URL it was given; only a
	// providers.ServicePather is routed one (receive).
	r.Post("/webhooks/{provider}/*", h.receive)
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

// servicePathRE is a service path after /webhooks/<name>/: segments of
// A-Za-z0-9._- (docs/contract.md, "Routes").
var servicePathRE = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)

// routedServicePath returns the service path r carries after its provider's
// route, with its leading slash ("" for the route itself); ok is false
// when r carries one that p does not take, or that is not a path of
// segments, so that it is 404 as an unknown route is.
func routedServicePath(r *http.Request, p providers.Provider) (path string, ok bool) {
	sub := chi.URLParam(r, "*")
	if sub == "" {
		// "/webhooks/snap/" is not the route itself.
		rc := chi.RouteContext(r.Context())
		return "", rc == nil || !strings.HasSuffix(rc.RoutePattern(), "/*")
	}
	sp, takes := p.(providers.ServicePather)
	if !takes || !sp.ServicePaths() || !servicePathRE.MatchString(sub) || dotSegment(sub) {
		return "", false
	}
	return "/" + sub, true
}

// dotSegment reports whether a service path has a "." or ".." segment,
// which a proxy in front may resolve before webhookd sees the path: the
// path signed and the path routed would then differ.
func dotSegment(sub string) bool {
	for seg := range strings.SplitSeq(sub, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}
