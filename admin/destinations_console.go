package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// destinationRow is one destination on the console's destinations page.
type destinationRow struct {
	Name, Delivery, URL         string
	Paused                      bool
	PausedSince, Queued, Oldest string
	Attempts                    string
	PauseHref, ResumeHref       string
	// Removed: a queue left by a destination a reload removed; it has no
	// pause button (there is nothing in force to pause).
	Removed bool
}

type destinationsPage struct {
	page
	Rows []destinationRow
}

// consoleDestinations is GET /destinations: each destination's delivery,
// pause, queue and attempts by outcome, with its pause or resume button.
func (h *handler) consoleDestinations(w http.ResponseWriter, r *http.Request) {
	views, err := h.destinations(r.Context())
	p := destinationsPage{page: page{Title: "Destinations", SignOut: h.Token != ""}}
	if err != nil {
		h.Logger.Warn("admin: destinations", "error", err.Error())
		p.Error = publicError(err)
	}
	switch r.URL.Query().Get("done") {
	case "paused":
		p.Flash = "Paused."
	case "resumed":
		p.Flash = "Resumed."
	case "notfound":
		p.Flash, p.FlashBad = "No such destination.", true
	case "failed":
		p.Flash, p.FlashBad = "The store did not take the change; try again.", true
	}
	now := h.Now()
	for _, v := range views {
		row := destinationRow{Name: v.Name, Delivery: v.Delivery, URL: v.URL, Paused: v.Paused, Queued: "-", Oldest: "-",
			PauseHref:  "/destinations/" + url.PathEscape(v.Name) + "/pause",
			ResumeHref: "/destinations/" + url.PathEscape(v.Name) + "/resume"}
		if v.PausedSince != nil {
			row.PausedSince = "since " + age(now, *v.PausedSince)
		}
		if v.Removed {
			row.Removed, row.URL = true, "not in the configuration: its events wait until it returns"
		}
		if v.Delivery == "queue" {
			row.Queued = fmt.Sprint(v.Queued)
			if v.OldestQueuedAt != nil {
				row.Oldest = v.OldestQueuedAt.UTC().Format(time.RFC3339) + " (" + age(now, *v.OldestQueuedAt) + ")"
			}
		}
		row.Attempts = h.attemptsText(v.Name)
		p.Rows = append(p.Rows, row)
	}
	h.render(w, http.StatusOK, h.pages.destinations, p)
}

// attemptsText is a destination's attempts by outcome, as counted by
// Config.Attempts on this node ("" without it).
func (h *handler) attemptsText(name string) string {
	if h.Attempts == nil {
		return ""
	}
	counts := h.Attempts(name)
	outcomes := make([]string, 0, len(counts))
	for o := range counts {
		outcomes = append(outcomes, o)
	}
	sort.Strings(outcomes)
	parts := make([]string, 0, len(outcomes))
	for _, o := range outcomes {
		parts = append(parts, fmt.Sprintf("%s %d", o, counts[o]))
	}
	return strings.Join(parts, " · ")
}

// consolePause is POST /destinations/{name}/pause and /resume, the page's
// buttons.
func (h *handler) consolePause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, err := h.setPaused(r.Context(), chi.URLParam(r, "name"), paused)
		done := "resumed"
		if paused {
			done = "paused"
		}
		switch {
		case err == nil:
		case statusOf(err) == http.StatusNotFound:
			done = "notfound"
		default:
			h.Logger.Warn("admin: pause failed", "error", err.Error())
			done = "failed"
		}
		http.Redirect(w, r, "/destinations?done="+done, http.StatusSeeOther)
	}
}
