package admin

import (
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/redrive"
)

// web holds the console's templates and its style sheet, compiled into the
// binary: no build step, nothing fetched from a CDN. The style sheet is
// inlined into each page, so the sign-in page needs no route of its own.
//
//go:embed web/*.html web/console.css
var web embed.FS

type pages struct {
	list, record, confirm, signin, overview, requests, destinations *template.Template
}

func loadPages() (*pages, error) {
	css, err := web.ReadFile("web/console.css")
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{"css": func() template.CSS { return template.CSS(css) }}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(web, "web/layout.html")
	if err != nil {
		return nil, err
	}
	page := func(name string) (*template.Template, error) {
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		return t.ParseFS(web, "web/"+name)
	}
	var p pages
	for name, dst := range map[string]**template.Template{
		"list.html": &p.list, "record.html": &p.record, "confirm.html": &p.confirm, "signin.html": &p.signin, "overview.html": &p.overview,
		"requests.html":     &p.requests,
		"destinations.html": &p.destinations,
	} {
		if *dst, err = page(name); err != nil {
			return nil, fmt.Errorf("admin: template %s: %w", name, err)
		}
	}
	return &p, nil
}

// page is what every page's layout needs.
type page struct {
	Title    string
	SignOut  bool // a token is set: offer to sign out
	Flash    string
	FlashBad bool
	Error    string
}

func (h *handler) render(w http.ResponseWriter, status int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		h.Logger.Error("admin: rendering a page failed", "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	// No script, no style sheet but the inline one, nothing from elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// row is one delivery in the list.
type row struct {
	Key, Path, Provider, Source, Destination, EventKey, Type, State, StateClass string
	Stored                                                                      bool
	Attempts                                                                    uint32
	Status                                                                      string
	Age, Created, Updated                                                       string
}

func stateClass(s dedupe.State) string {
	switch s {
	case dedupe.Completed:
		return "completed"
	case dedupe.Failed:
		return "failed"
	case dedupe.InFlight:
		return "inflight"
	case dedupe.Queued:
		return "queued"
	}
	return "unknown"
}

// age says how long ago t was, in the largest whole unit.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return strconv.Itoa(max(0, int(d.Seconds()))) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h ago"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d ago"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func (h *handler) newRow(rec *dedupe.Record) row {
	k, _ := dedupe.ParseKey(rec.Key)
	provider := h.providerOf(rec.Key)
	if provider == "" {
		provider = k.Source
	}
	r := row{
		Key: k.ID(), Path: recordPath(rec.Key), Provider: provider, Source: k.Source, Destination: k.DestinationName(), EventKey: k.Event,
		State: rec.State.String(), StateClass: stateClass(rec.State), Stored: rec.Request.Stored(),
		Attempts: rec.Attempts, Status: "–", Age: age(h.Now(), rec.CreatedAt),
		Created: stamp(rec.CreatedAt), Updated: stamp(rec.UpdatedAt),
	}
	if rec.Request != nil {
		r.Type = rec.Request.EventType
	}
	if rec.Response.Status != 0 {
		r.Status = strconv.Itoa(rec.Response.Status)
	}
	return r
}

// flashes are the messages a console action leaves for the page it
// returns to, named by code so that a link cannot make the page say
// anything else.
var flashes = map[string]struct {
	text string
	bad  bool
}{
	"deleted":     {"Deleted. The provider's next delivery of this event will be forwarded again.", false},
	"delivered":   {"Redriven: the core service accepted it.", false},
	"requeued":    {"Requeued: the delivery loop attempts it again, max_age counted from now.", false},
	"rejected":    {"Redriven: the core service rejected it again; the new answer is recorded.", true},
	"unavailable": {"Not redriven: the core service did not answer. The record is as it was.", true},
	"inflight":    {"Not redriven: a delivery of this event is being forwarded right now. Try again when its lease has passed.", true},
	"norequest":   {"Not redriven: no request body was stored for this event (requests were not being stored, or the body was too large).", true},
	"notfound":    {"That record is gone (deleted or pruned).", true},
	"failed":      {"The store could not do that; see the logs.", true},
}

func (h *handler) basePage(r *http.Request, title string) page {
	p := page{Title: title, SignOut: h.Token != ""}
	if f, ok := flashes[r.URL.Query().Get("done")]; ok {
		p.Flash, p.FlashBad = f.text, f.bad
	}
	return p
}

type listPage struct {
	page
	Providers, States []string
	Provider, State   string
	// Destinations are the configuration's destinations, offered by the
	// filter beside the sources; Destination is the one chosen.
	Destinations []string
	Destination  string
	Rows         []row
	Next         string
}

func (h *handler) consoleList(w http.ResponseWriter, r *http.Request) {
	data := listPage{page: h.basePage(r, "Deliveries"), Providers: h.Providers,
		States: []string{"IN_FLIGHT", "COMPLETED", "FAILED", "QUEUED"}}
	o, err := listOptions(r)
	data.Provider, data.Destination = o.Provider, o.Destination
	if h.Destinations != nil {
		for _, d := range h.Destinations() {
			data.Destinations = append(data.Destinations, d.Name)
		}
	}
	if o.Destination != "" && !slices.Contains(data.Destinations, o.Destination) {
		// A destination a reload removed still names records.
		data.Destinations = append(data.Destinations, o.Destination)
	}
	if o.State != 0 {
		data.State = o.State.String()
	}
	status := http.StatusOK
	if err == nil {
		var recs []dedupe.Record
		var next string
		recs, next, err = h.Store.Recent(r.Context(), o)
		for i := range recs {
			data.Rows = append(data.Rows, h.newRow(&recs[i]))
		}
		if next != "" {
			q := r.URL.Query()
			q.Set("after", next)
			q.Del("done")
			data.Next = "/?" + q.Encode()
		}
	}
	if err != nil {
		status = statusOf(err)
		if status == http.StatusInternalServerError || status == http.StatusServiceUnavailable {
			h.Logger.Warn("admin: listing failed", "error", err.Error())
		}
		data.Error = publicError(err)
		if errors.Is(err, dedupe.ErrInvalidCursor) || status == http.StatusBadRequest {
			data.Error = err.Error()
		}
	}
	h.render(w, status, h.pages.list, data)
}

// header is one forwarded header, for the detail page.
type header struct{ Name, Value string }

type recordPage struct {
	page
	Row
	Rec            RecordView
	Headers        []header
	RequestBody    string
	RequestNote    string
	ResponseBody   string
	ContentType    string
	LeaseUntil     string
	Expires        string
	CanRedrive     bool
	RedriveBlocked string
}

// Row is the list's row, embedded in the detail page.
type Row = row

func (h *handler) consoleRecord(w http.ResponseWriter, r *http.Request) {
	key, err := h.recordKey(r)
	var rec dedupe.Record
	if err == nil {
		rec, err = h.Store.Get(r.Context(), key)
	}
	if err != nil {
		data := h.basePage(r, "Record")
		data.Error = publicError(err)
		h.render(w, statusOf(err), h.pages.record, recordPage{page: data})
		return
	}
	full := h.view(&rec, true)
	data := recordPage{page: h.basePage(r, full.Key), Row: h.newRow(&rec), Rec: full,
		ContentType: rec.Response.ContentType, Expires: stamp(rec.ExpiresAt)}
	if rec.State == dedupe.InFlight {
		data.LeaseUntil = stamp(rec.LeaseUntil)
	}
	for name, v := range full.Request.Headers {
		data.Headers = append(data.Headers, header{name, v})
	}
	sort.Slice(data.Headers, func(i, j int) bool { return data.Headers[i].Name < data.Headers[j].Name })
	switch {
	case rec.Request == nil:
		data.RequestNote = "No request was kept with this record (it was claimed before webhookd kept requests)."
	case !rec.Request.Stored():
		data.RequestNote = fmt.Sprintf("The body (%d bytes) was not kept: requests were not being stored, or the body was over %d bytes.", rec.Request.Size, dedupe.MaxStoredRequest)
	default:
		data.RequestBody = pretty(rec.Request.Body)
	}
	if full.Response != nil {
		data.ResponseBody = pretty(rec.Response.Body)
	}
	if err := dedupe.CheckRedrive(&rec, h.Now()); err != nil {
		data.RedriveBlocked = redriveBlocked(err)
	} else {
		data.CanRedrive = true
	}
	h.render(w, http.StatusOK, h.pages.record, data)
}

// redriveBlocked says why the console offers no redrive.
func redriveBlocked(err error) string {
	switch {
	case errors.Is(err, dedupe.ErrInFlight):
		return "A delivery of this event is being forwarded; it can be redriven once its lease has passed."
	case errors.Is(err, dedupe.ErrNoRequest):
		return "No request body was stored, so it cannot be forwarded again."
	}
	return err.Error()
}

// pretty shows a body for reading: JSON indented, other text as it is,
// anything else as base64.
func pretty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var out bytes.Buffer
	if json.Valid(b) && json.Indent(&out, b, "", "  ") == nil {
		return out.String()
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return "(binary, " + strconv.Itoa(len(b)) + " bytes, base64)\n" + base64.StdEncoding.EncodeToString(b)
}

type confirmPage struct {
	page
	Action, Key, Path, Question, Detail, Button string
	Danger                                      bool
}

func (h *handler) consoleConfirm(w http.ResponseWriter, r *http.Request) {
	key := keyParam(r)
	data := confirmPage{page: h.basePage(r, "Confirm"), Key: key, Path: recordPath(key)}
	switch r.URL.Query().Get("action") {
	case "redrive":
		data.Action, data.Button = "redrive", "Redrive"
		data.Question = "Forward this event to the core service again?"
		// Offered for a delivered (COMPLETED) event too: the operator
		// should know the core service sees it a second time.
		data.Detail = "The core service will receive the stored request again with the same Idempotency-Key (" + key + ") and headers as the first time, even if it accepted this event already, and its new answer is recorded."
	case "delete":
		data.Action, data.Button, data.Danger = "delete", "Delete", true
		data.Question = "Delete this record?"
		data.Detail = "The stored request and answer are gone for good, and the provider's next delivery of this event will be forwarded to the core service again."
	default:
		http.Redirect(w, r, data.Path, http.StatusSeeOther)
		return
	}
	h.render(w, http.StatusOK, h.pages.confirm, data)
}

// consoleRedrive redrives from the console's confirmation form, then
// returns to the record's page with what became of it (post, redirect,
// get: a reload does not redrive again).
func (h *handler) consoleRedrive(w http.ResponseWriter, r *http.Request) {
	out, err := h.redrive(r)
	res := "delivered"
	switch {
	case err == nil && out.Record.State == dedupe.Queued:
		res = "requeued"
	case err == nil:
		rec, gerr := h.Store.Get(r.Context(), keyParam(r))
		if gerr == nil && rec.State == dedupe.Failed {
			res = "rejected"
		}
	case errors.Is(err, redrive.ErrNotDelivered):
		res = "unavailable"
	case errors.Is(err, dedupe.ErrInFlight):
		res = "inflight"
	case errors.Is(err, dedupe.ErrNoRequest):
		res = "norequest"
	case errors.Is(err, dedupe.ErrNotFound):
		res = "notfound"
	default:
		h.Logger.Warn("admin: redrive failed", "error", err.Error())
		res = "failed"
	}
	http.Redirect(w, r, recordPath(keyParam(r))+"?done="+res, http.StatusSeeOther)
}

func (h *handler) consoleDelete(w http.ResponseWriter, r *http.Request) {
	key := keyParam(r)
	err := h.Store.Delete(r.Context(), key)
	switch {
	case err == nil:
		http.Redirect(w, r, "/?done=deleted", http.StatusSeeOther)
		return
	case errors.Is(err, dedupe.ErrInFlight):
		http.Redirect(w, r, recordPath(key)+"?done=inflight", http.StatusSeeOther)
		return
	case errors.Is(err, dedupe.ErrNotFound):
		http.Redirect(w, r, "/?done=notfound", http.StatusSeeOther)
		return
	}
	h.Logger.Warn("admin: delete failed", "key", key, "error", err.Error())
	http.Redirect(w, r, recordPath(key)+"?done=failed", http.StatusSeeOther)
}

type signInPage struct {
	page
	Next string
}

func (h *handler) renderSignIn(w http.ResponseWriter, r *http.Request, status int, msg string) {
	next := r.URL.RequestURI()
	if r.Method == http.MethodPost {
		next = localPath(r.PostFormValue("next"))
	}
	h.render(w, status, h.pages.signin, signInPage{page: page{Title: "Sign in", Error: msg}, Next: next})
}
