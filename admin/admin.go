// Package admin is webhookd's operator listener (WEBHOOKD_ADMIN_ADDR): the
// JSON records API, the console (server-rendered pages, no JavaScript
// build, nothing fetched from elsewhere), /metrics and /healthz
// (docs/contract.md, "The admin listener").
//
// It must never be reachable without the token when one is set
// (WEBHOOKD_ADMIN_TOKEN): every route but /healthz and the sign-in form
// answers 401 without `Authorization: Bearer <token>` or the session
// cookie the sign-in sets, and never redirects. Every state-changing
// request is refused when a browser says it comes from another site
// (auth.go). It must never change a record but through the store's own
// transitions (Delete, Redrive): the store decides what is allowed.
package admin

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/overview"
	"github.com/webhookd/webhookd/redrive"
)

// Config holds the admin listener's dependencies.
type Config struct {
	// Store is the dedupe store the records are read from and deleted in.
	Store dedupe.Store
	// Redriver redrives records (the same one `keys redrive` uses).
	Redriver *redrive.Redriver
	// Token, when set, is required on every route but /healthz and the
	// sign-in form. Empty leaves the listener open, which serve allows on a
	// loopback address only; requests must then name a loopback host, so
	// that a web page cannot reach the listener by rebinding its own DNS
	// name to 127.0.0.1.
	Token string
	// Metrics, if set, is served at /metrics.
	Metrics http.Handler
	// Providers are the configured providers' names, offered by the
	// console's filter.
	Providers []string
	// ProviderOf names the provider of a source, for the records' views;
	// nil, or "" for a source, names the source itself (every source made
	// from the environment is named after its provider).
	ProviderOf func(source string) string
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock (ages in the console); time.Now if nil.
	Now func() time.Time
	// Overview holds the delivery figures of GET /overview and
	// /api/summary: the Recorder the receiver's OnDelivery feeds. Nil
	// makes an empty one, whose figures stay at zero.
	Overview *overview.Recorder
	// Requests is the store's request log (GET /api/requests and the
	// console's /requests); nil answers them 404.
	Requests RequestLister
	// Queue and Destinations serve the destinations routes and the
	// redrive by filter: the store's queues and pause flags, and the
	// destinations of the configuration in force. Nil Destinations lists
	// none.
	Queue        Queue
	Destinations func() []Destination
	// Attempts, if set, counts a destination's delivery attempts on this
	// node by outcome, for the destinations page.
	Attempts func(destination string) map[string]int
}

type handler struct {
	Config
	pages  *pages
	failed *overview.FailedCounter
	queues *overview.QueueCounter
}

// New returns the admin listener's handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil || cfg.Redriver == nil {
		return nil, errors.New("admin: Store and Redriver are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	if cfg.Overview == nil {
		cfg.Overview = overview.NewRecorder(cfg.Providers, cfg.Now)
	}
	h := &handler{Config: cfg, pages: p, failed: &overview.FailedCounter{Store: cfg.Store, Now: cfg.Now}}
	if cfg.Queue != nil {
		h.queues = &overview.QueueCounter{Store: cfg.Queue, Now: cfg.Now}
	}
	return h.routes(), nil
}

// routes lists every route of the admin listener.
func (h *handler) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(h.loopbackOnly, crossOrigin)
	r.Get("/healthz", healthz)
	r.Post("/signin", h.signIn)
	r.Group(func(r chi.Router) {
		r.Use(h.requireAuth)
		r.Get("/", h.consoleList)
		r.Get("/overview", h.consoleOverview)
		r.Get("/requests", h.consoleRequests)
		r.Get("/records/{key}", h.consoleRecord)
		r.Get("/records/{key}/confirm", h.consoleConfirm)
		r.Post("/records/{key}/redrive", h.consoleRedrive)
		r.Post("/records/{key}/delete", h.consoleDelete)
		r.Post("/signout", h.signOut)
		r.Get("/destinations", h.consoleDestinations)
		r.Post("/destinations/{name}/pause", h.consolePause(true))
		r.Post("/destinations/{name}/resume", h.consolePause(false))

		r.Get("/api/records", h.apiList)
		r.Get("/api/records/{key}", h.apiGet)
		r.Delete("/api/records/{key}", h.apiDelete)
		r.Post("/api/records/{key}/redrive", h.apiRedrive)
		r.Get("/api/summary", h.apiSummary)
		r.Get("/api/requests", h.apiRequests)
		r.Get("/api/destinations", h.apiDestinations)
		r.Post("/api/destinations/{name}/pause", h.apiPause(true))
		r.Post("/api/destinations/{name}/resume", h.apiPause(false))
		r.Post("/api/redrive", h.apiRedriveFilter)
		if h.Metrics != nil {
			r.Method(http.MethodGet, "/metrics", h.Metrics)
		}
	})
	return r
}

// healthz answers 200 while the process runs.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// keyParam is the {key} path segment, unescaped: a key may hold "/" (sent
// as %2F), and chi routes on the escaped path when there is one.
func keyParam(r *http.Request) string {
	k := chi.URLParam(r, "key")
	if r.URL.RawPath != "" {
		if u, err := url.PathUnescape(k); err == nil {
			return u
		}
	}
	return k
}

// view is rec's RecordView, its provider named by ProviderOf.
func (h *handler) view(rec *dedupe.Record, full bool) RecordView {
	return NewRecordView(rec, h.providerOf(rec.Key), full)
}

func (h *handler) providerOf(storedKey string) string {
	if h.ProviderOf == nil {
		return ""
	}
	k, err := dedupe.ParseKey(storedKey)
	if err != nil {
		return ""
	}
	return h.ProviderOf(k.Source)
}

// recordPath is the console page of key.
func recordPath(key string) string { return "/records/" + url.PathEscape(key) }
