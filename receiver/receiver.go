package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dispatch"
	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/routing"
)

// Store is what the receiver needs of the dedupe store: the four
// transitions of a delivery, which every backend (dedupe.Store) has.
type Store = dedupe.Claimer

// Forwarder sends a claimed event downstream (dispatch.Forwarder).
type Forwarder interface {
	Forward(ctx context.Context, req dispatch.Request) dispatch.Result
}

// FailedPolicy says what a permanent downstream rejection leaves in the store.
type FailedPolicy string

// The policies of WEBHOOKD_FAILED_POLICY.
const (
	// PolicyReplay records the rejection as FAILED and replays it.
	PolicyReplay FailedPolicy = "replay"
	// PolicyRetry releases the key, so the next delivery is forwarded again.
	PolicyRetry FailedPolicy = "retry"
)

// RejectedByHeader is set on every 4xx answer to a provider, to say who
// refused the delivery: RejectedByCore when the core service answered the
// 4xx (passed through unchanged, fresh or replayed), RejectedByWebhookd when
// webhookd refused it itself (a fingerprint mismatch's 422, a bad
// signature's 401, ...). The statuses and bodies alone cannot tell them
// apart: the core service's own 422 looks exactly like a mismatch's 422.
const RejectedByHeader = "Webhook-Rejected-By"

// The values of RejectedByHeader, and of Delivery.RejectedBy.
const (
	RejectedByCore     = "core"
	RejectedByWebhookd = "webhookd"
)

// Delivery describes one finished request to a provider route, for logs and
// metrics: the request's own, and one per (item, destination) record of a
// request that has several (Destination set).
type Delivery struct {
	// Provider is the source's provider's name; for a route that names no
	// source it is the route's segment as requested, whatever the client
	// sent, so bound it before using it as a metric label.
	Provider string
	// Source is the source's name (the provider's without
	// WEBHOOKD_CONFIG) once the route is known; empty for an unknown one.
	Source string
	// Destination is the destination's name, on the line of one
	// (event, destination) record; empty on a request's own line.
	Destination string
	// Key is the event's Idempotency-Key, <source>:<event-key>
	// (dedupe.Key.ID); empty until the event is derived.
	Key string
	// Type is the event type, as forwarded in Webhook-Event-Type.
	Type string
	// Outcome is one of Outcomes().
	Outcome Outcome
	// Reason says why webhookd refused the delivery, one of Reasons();
	// empty when it did not (the core's own rejections included).
	Reason string
	// Status is the HTTP status the provider was answered.
	Status int
	// Received is the request's arrival; RemoteAddr its peer's address
	// (http.Request.RemoteAddr); Size the bytes of body read (0 when
	// none was: an unknown route, a body refused as too large).
	Received   time.Time
	RemoteAddr string
	Size       int64
	// Duration runs from the request's arrival to its answer.
	Duration time.Duration
	// Dispatch is set when the event was forwarded.
	Dispatch *dispatch.Result
	// RejectedBy is RejectedByCore or RejectedByWebhookd when Status is a
	// 4xx, as sent in RejectedByHeader; empty otherwise.
	RejectedBy string
	// Failed names the Dependency* that could not be reached when Outcome
	// is OutcomeUnavailable; empty otherwise, and for a shutdown or a batch
	// out of time.
	Failed string
	// Items is how many events the request carried, on the line of a
	// request split into items (OutcomeBatch); each item has its own
	// Delivery too. Zero otherwise.
	Items int
}

// Config holds the receiver's dependencies and settings.
type Config struct {
	// BaseContext bounds the outbound calls of every delivery (Confirm and
	// Forward). They are not cut short when a provider hangs up, since a
	// claimed event must be settled either way, but they are when
	// BaseContext is done: serve cancels it when the shutdown grace period
	// runs out, and each delivery still forwarding then releases its key and
	// answers 503, so the provider retries against another instance or
	// after the restart. context.Background() if nil.
	BaseContext context.Context
	// Routing returns the sources, destinations and routes in force. A
	// delivery reads it once, when it starts, so that a reload (SIGHUP)
	// changes what deliveries starting afterwards see, never one under
	// way. Nil serves Providers, each a source named after it, to
	// Forwarder as the one destination "default" under FailedPolicy: what
	// the environment alone configures.
	Routing func() *Routes
	// Providers and Forwarder are used when Routing is nil.
	Providers *providers.Registry
	Store     Store
	Forwarder Forwarder
	// Ready reports whether the store can be read and written (/readyz).
	Ready func(ctx context.Context) error
	// Metrics, if set, is served at /metrics.
	Metrics http.Handler
	// MaxBodyBytes bounds a delivery's body (413 beyond it).
	MaxBodyBytes int64
	// MaxPendingBodyBytes bounds the bodies of all requests not yet
	// verified, together (body.go); at least MaxBodyBytes.
	// DefaultMaxPendingBodyBytes, or MaxBodyBytes if larger, when zero.
	MaxPendingBodyBytes int64
	// BodyWait is how long a request waits for room in
	// MaxPendingBodyBytes before it is answered 503 (ErrBusy).
	// DefaultBodyWait if zero; negative does not wait.
	BodyWait time.Duration
	// FailedPolicy is the destination's policy when Routing is nil (each
	// routing.Destination has its own otherwise).
	FailedPolicy FailedPolicy
	// StoreTimeout bounds each store call of a delivery (claim, complete,
	// fail, release) and the /readyz probe: a call that runs out answers
	// 503 with Retry-After. DefaultStoreTimeout if zero.
	StoreTimeout time.Duration
	// BatchTimeout bounds the whole of a request split into items (a
	// batch provider's, docs/contract.md "Batches (Adyen)"), whose items
	// are forwarded one after another, each within the forwarder's own
	// budget: without it a batch of N items could take N dispatch budgets
	// while the provider gives up after one and sends the request again.
	// When it runs out, the forward in flight is cut (its key released)
	// and the items not reached are not claimed; each answers 503, and so
	// does the request. No bound if zero.
	BatchTimeout time.Duration
	// RetryAfter is the Retry-After sent with 503 answers.
	RetryAfter time.Duration
	Logger     *slog.Logger
	// OnDelivery, if set, is called once per provider request after it is
	// answered, and once per item of a request split into items (before
	// the request's own call).
	OnDelivery func(Delivery)
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Capture, if set, is called with every verified event's source (its
	// provider's name without WEBHOOKD_CONFIG), event key (without the
	// source's prefix) and raw body, once per event whatever its
	// destinations, right after the event is routed and before any key is
	// claimed: duplicates are captured too, unverified bodies and unrouted
	// events never. It runs on the request's goroutine, must not modify
	// body, and cannot fail the delivery (capture.Writer.Hook logs its own
	// failures).
	Capture func(source, eventKey string, body []byte)
	// Tracer, if set, traces each delivery (trace.go); nil traces
	// nothing, at no cost.
	Tracer trace.Tracer
	// Queue stores the events of queue destinations (dedupe.Queue); Wake,
	// if set, tells the delivery loop one was queued for a destination.
	Queue Queue
	Wake  func(destination string)
	// Paused, if set, says whether a destination is paused (its flag in
	// the store): a paused sync destination's events are answered 503
	// without a forward, so that the gateway keeps them.
	Paused func(destination string) bool
	// Load, if set, counts the deliveries open (load.go), for the work
	// that gives way to them.
	Load *Load
	// StoreRequests keeps each claimed request's body with its record
	// (WEBHOOKD_STORE_REQUESTS), so that it can be redriven and shown in
	// the console; without it a record keeps the request's headers and
	// size only.
	StoreRequests bool
}

type handler struct {
	Config
	bodies *bodyBudget
}

// New returns the receiver's HTTP handler with every route of routes.go.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil || cfg.Routing == nil && (cfg.Providers == nil || cfg.Forwarder == nil) {
		return nil, errors.New("receiver: Store, and Routing or Providers and Forwarder, are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		return nil, errors.New("receiver: MaxBodyBytes must be positive")
	}
	if cfg.MaxPendingBodyBytes == 0 {
		cfg.MaxPendingBodyBytes = max(DefaultMaxPendingBodyBytes, cfg.MaxBodyBytes)
	}
	if cfg.MaxPendingBodyBytes < cfg.MaxBodyBytes {
		return nil, errors.New("receiver: MaxPendingBodyBytes must be at least MaxBodyBytes")
	}
	if cfg.BodyWait == 0 {
		cfg.BodyWait = DefaultBodyWait
	}
	switch cfg.FailedPolicy {
	case "":
		cfg.FailedPolicy = PolicyReplay
	case PolicyReplay, PolicyRetry:
	default:
		return nil, errors.New("receiver: FailedPolicy must be replay or retry")
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	cfg.Store = boundedStore{Store: cfg.Store, timeout: cfg.StoreTimeout}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.BaseContext == nil {
		cfg.BaseContext = context.Background()
	}
	if cfg.Routing == nil {
		rt, err := envRoutes(cfg.Providers, cfg.Forwarder, cfg.FailedPolicy)
		if err != nil {
			return nil, err
		}
		cfg.Routing = func() *Routes { return rt }
	}
	h := &handler{Config: cfg, bodies: newBodyBudget(cfg.MaxPendingBodyBytes, cfg.BodyWait)}
	return h.routes(), nil
}

// delivery carries one request through the pipeline: what is reported of
// it (Delivery) and the state its steps share, filled in as they go.
type delivery struct {
	Delivery
	start time.Time
	w     http.ResponseWriter
	r     *http.Request
	// routes is the configuration the delivery started under, src its
	// source once the route names one.
	routes *Routes
	src    *routing.Source
	// dest and fwd are the destination of the record this delivery
	// settles, and its forwarder.
	dest *routing.Destination
	fwd  Forwarder
	// captured says the event was captured already (the request's other
	// destinations' deliveries).
	captured bool
	// provider, body and ev are set once the event is derived.
	provider providers.Provider
	body     []byte
	ev       providers.Event
	// key is the store key of the record this delivery settles, and req
	// the forward of it (set with it, by setKey).
	key dedupe.Key
	req dispatch.Request
	// budget, set on the items of a request split into items when
	// Config.BatchTimeout is, ends when the request's time is up: it cuts
	// the item's outbound calls as BaseContext does.
	budget context.Context
	// storeCtx runs the store calls; lease is set once the key is claimed.
	storeCtx context.Context
	lease    dedupe.Lease
	// span is the request's root span when tracing (trace.go).
	span trace.Span
}

func (h *handler) receive(w http.ResponseWriter, r *http.Request) {
	d := &delivery{start: h.Now(), w: w, r: r, routes: h.Routing()}
	d.Provider = chi.URLParam(r, "provider")
	d.Received, d.RemoteAddr = d.start, r.RemoteAddr
	src, ok := d.routes.Config.Source(d.Provider)
	if ok {
		d.src, d.Source, d.Provider = src, src.Name, src.Provider.Name()
	}
	h.startTrace(d)
	defer h.report(d)

	var servicePath string
	if ok {
		servicePath, ok = routedServicePath(r, src.Provider)
	}
	if !ok {
		h.fail(d, ErrUnknownProvider, nil)
		return
	}
	p := src.Provider
	pending := pendingBody{budget: h.bodies}
	defer pending.release()
	body, err := pending.read(w, r, h.MaxBodyBytes)
	if err != nil {
		h.fail(d, err, nil)
		return
	}
	d.Size = int64(len(body))
	h.Load.enter()
	defer h.Load.leave()
	in := providers.Delivery{Header: r.Header, Body: body, Path: servicePath}
	if r.URL.RawQuery != "" {
		// Parsed only when present: most providers send none, and the
		// map would cost every delivery an allocation.
		in.Query = r.URL.Query()
	}
	verify := h.step(d, "verify")
	err = p.Verify(d.r.Context(), in)
	verify.end(err)
	// Verified or refused, the body is no longer anyone's to send: its
	// share of MaxPendingBodyBytes goes back (body.go).
	pending.release()
	if err != nil {
		h.keyOfGenuine(d, p, in, err)
		h.fail(d, err, nil)
		return
	}
	ack := d.routes.ack(d.Source)
	items, err := parse(p, d.Source, in, ack != nil)
	if err != nil {
		h.fail(d, err, nil)
		return
	}
	d.provider = p
	if ack == nil {
		d.body, d.ev = items[0].Body, items[0].Event
		var buf [4]*routing.Destination
		if dests := h.route(buf[:0], d); len(dests) == 1 && dests[0].Delivery != routing.Queue {
			// One sync destination, no acknowledgement of the provider's
			// own: the core service's answer is the provider's, as it
			// always was. A queue destination's is the acknowledgement.
			d.setKey(dests[0])
			h.deliver(d)
			return
		}
		ack = defaultAck
	}
	h.receiveItems(d, items, ack)
}

// route appends the destinations of d's event to out.
func (h *handler) route(out []*routing.Destination, d *delivery) []*routing.Destination {
	return d.routes.Config.AppendRoute(out, d.src, d.ev.Type, providers.NewBodyFields(d.body))
}

// keyOfGenuine names the event of a delivery refused for its account
// (account_not_allowed): the adapters check the account only once the
// signature holds, so the event is genuine, and the request log and the
// delivery line may say which it was. Any other refusal names none.
func (h *handler) keyOfGenuine(d *delivery, p providers.Provider, in providers.Delivery, err error) {
	if providers.Reason(err) != providers.ReasonAccountNotAllowed {
		return
	}
	if items, perr := parse(p, d.Source, in, d.routes.ack(d.Source) != nil); perr == nil {
		d.Key, d.Type = dedupe.Key{Source: d.Source, Event: items[0].Key}.ID(), items[0].Type
	}
}

// parse derives a verified delivery's items and checks that every one is
// usable before any is claimed, as a bad signature stores nothing either.
// A provider without an acknowledgement (acked false) relays the core
// service's answer to its one event, so its request must carry exactly one.
func parse(p providers.Provider, source string, in providers.Delivery, acked bool) ([]providers.Item, error) {
	items, err := p.Parse(in)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 || (len(items) > 1 && !acked) {
		return nil, ErrBadEvent
	}
	for _, it := range items {
		if err := checkEvent(source, it.Event); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// deliver runs one verified event (d's provider, body and ev are set)
// through the store and downstream, and answers it on d.w: the whole
// request's event, or one item of a batch (batch.go).
func (h *handler) deliver(d *delivery) {
	ev, body, r := d.ev, d.body, d.r
	if h.Capture != nil && !d.captured {
		h.Capture(d.Source, ev.Key, body)
	}

	if h.BaseContext.Err() != nil {
		// Too late to start a forward that the shutdown would cut off.
		h.fail(d, ErrShuttingDown, nil)
		return
	}
	// From here on the store's writes must finish even if the provider
	// hangs up: a claim left behind would block the event until its lease
	// passes. They run on a context the request's end does not cancel;
	// each is bounded by StoreTimeout instead (boundedStore).
	d.storeCtx = context.WithoutCancel(r.Context())
	if d.queued() {
		h.enqueue(d)
		return
	}
	if h.Paused != nil && h.Paused(d.dest.Name) {
		h.fail(d, ErrPaused, nil)
		return
	}
	// The request is kept with the claim, in the same write, for redrive
	// and the console: its headers and size always, its body when
	// StoreRequests is set.
	req := dedupe.NewRequest(r.Header.Get("Content-Type"), ev.Type, body, h.StoreRequests)
	claim := h.step(d, "claim")
	lease, rec, err := h.Store.Claim(d.storeCtx, d.storedKey(), ev.Fingerprint, req)
	claim.end(err)
	switch {
	case err != nil:
		h.fail(d, err, rec)
		return
	case rec != nil:
		d.Outcome = OutcomeReplayed
		h.answer(d, rec.Response, true)
		return
	}
	d.lease = lease
	settled := false
	defer func() {
		if !settled {
			// Only a panic below gets here, since every other path settles
			// the lease: free the key now rather than block the
			// provider's retries for a whole lease.
			h.release(d)
		}
	}()
	h.forward(d)
	settled = true
}

// forward runs the claimed delivery to its end: confirm, forward, record,
// answer. Every path completes, fails or releases the lease.
func (h *handler) forward(d *delivery) {
	// The outbound calls keep the request's values and outlive the request,
	// as the store calls do, but end with BaseContext (see
	// Config.BaseContext).
	callCtx, cancel := context.WithCancel(d.storeCtx)
	defer cancel()
	defer context.AfterFunc(h.BaseContext, cancel)()
	if d.budget != nil {
		defer context.AfterFunc(d.budget, cancel)()
	}
	if c, ok := d.provider.(providers.Confirmer); ok {
		confirm := h.step(d, "confirm")
		err := c.Confirm(callCtx, providers.Item{Event: d.ev, Body: d.body})
		confirm.end(err)
		if err != nil {
			h.release(d)
			h.fail(d, h.outOfTime(d, h.orShutdown(err)), nil)
			return
		}
	}
	res := d.fwd.Forward(callCtx, d.req)
	d.Dispatch = &res
	resp := dedupe.Response{Status: res.Status, ContentType: res.ContentType, Body: res.Body}
	switch {
	case res.Outcome == dispatch.Delivered:
		d.Outcome = OutcomeForwarded
		rec := h.step(d, "record")
		err := h.Store.Complete(d.storeCtx, d.lease, resp)
		rec.end(err)
		h.record(d, err)
	case res.Outcome == dispatch.Rejected && d.policy() == PolicyReplay:
		d.Outcome = OutcomeCoreRejected
		rec := h.step(d, "record")
		err := h.Store.Fail(d.storeCtx, d.lease, resp)
		rec.end(err)
		h.record(d, err)
	case res.Outcome == dispatch.Rejected:
		d.Outcome = OutcomeCoreRejected
		h.release(d)
	default:
		h.release(d)
		h.fail(d, h.outOfTime(d, h.orShutdown(ErrDownstreamUnavailable)), nil)
		return
	}
	// The downstream has acted on the event; its answer stands even if
	// recording it failed (logged in record), since answering 503 now would
	// only invite a second forward.
	h.answer(d, resp, false)
}

// orShutdown names the shutdown as the reason a call could not complete,
// when it is; an answer such as a Confirmer's mismatch stands.
func (h *handler) orShutdown(err error) error {
	if status, _ := classify(err); status == http.StatusServiceUnavailable && h.BaseContext.Err() != nil {
		return ErrShuttingDown
	}
	return err
}

// checkEvent refuses event keys the store cannot hold (dedupe.Key decides)
// and types that would corrupt a forwarded header.
func checkEvent(source string, ev providers.Event) error {
	if err := (dedupe.Key{Source: source, Event: ev.Key}).Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	for i := 0; i < len(ev.Type); i++ {
		if c := ev.Type[i]; c < 0x20 || c == 0x7f {
			return ErrBadEvent
		}
	}
	return nil
}

// setKey sets the key of d's event for dest, and the request that
// forwards it there.
func (d *delivery) setKey(dest *routing.Destination) {
	d.dest, d.fwd, d.Destination = dest, d.routes.Forwarders[dest.Name], dest.Name
	d.key = dedupe.Key{Source: d.Source, Event: d.ev.Key}
	if dest.Name != dedupe.DefaultDestination {
		d.key.Destination = dest.Name
	}
	d.req = dispatch.NewRequest(d.key, d.provider.Name(), d.ev.Type, d.r.Header.Get("Content-Type"), d.body)
	d.Key, d.Type = d.req.IdempotencyKey, d.ev.Type
}

// policy is the failed policy of d's destination.
func (d *delivery) policy() FailedPolicy { return FailedPolicy(d.dest.FailedPolicy) }

// storedKey is the store key of d's record: the Idempotency-Key itself
// for the default destination (no second string to build).
func (d *delivery) storedKey() string {
	if d.key.Destination == "" {
		return d.Key
	}
	return d.key.String()
}

// record logs a failure to record the downstream's answer of a claimed
// delivery.
func (h *handler) record(d *delivery, err error) {
	if err != nil {
		h.Logger.LogAttrs(d.storeCtx, slog.LevelError, "could not record the downstream's answer",
			slog.String("provider", d.Provider), slog.String("key", d.Key), slog.String("error", err.Error()))
	}
}

// release frees a claimed delivery's key.
func (h *handler) release(d *delivery) {
	rel := h.step(d, "release")
	err := h.Store.Release(d.storeCtx, d.lease)
	rel.end(err)
	if err != nil && !errors.Is(err, dedupe.ErrLeaseLost) {
		// The claim stays until its lease passes; then the key is free.
		h.Logger.LogAttrs(d.storeCtx, slog.LevelError, "could not release event key",
			slog.String("provider", d.Provider), slog.String("key", d.Key), slog.String("error", err.Error()))
	}
}

// answer writes a downstream response, fresh or replayed.
func (h *handler) answer(d *delivery, resp dedupe.Response, replayed bool) {
	w := d.w
	if resp.ContentType != "" {
		w.Header().Set("Content-Type", resp.ContentType)
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	status := resp.Status
	if status < 100 || status > 999 {
		status = http.StatusOK
	}
	d.Status = status
	// Only the core service's answers come through here, so a 4xx is its.
	markRejection(d, RejectedByCore)
	w.WriteHeader(status)
	_, _ = w.Write(resp.Body)
}

// fail answers err with the status classify gives it. rec, when the store
// returned one, tells a 409 how long the lease runs.
func (h *handler) fail(d *delivery, err error, rec *dedupe.Record) {
	w := d.w
	status, out := classify(err)
	d.Status, d.Outcome = status, out
	d.Reason = reason(err)
	d.Failed = dependency(err)
	markRejection(d, RejectedByWebhookd)
	switch status {
	case http.StatusConflict:
		wait := h.RetryAfter
		if rec != nil {
			wait = rec.LeaseUntil.Sub(h.Now())
		}
		w.Header().Set("Retry-After", retryAfter(wait))
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", retryAfter(h.RetryAfter))
	}
	msg, hidden := publicMessage(err)
	if hidden {
		level := slog.LevelWarn
		if status == http.StatusInternalServerError {
			level = slog.LevelError
		}
		h.Logger.LogAttrs(d.ctx(), level, "delivery failed",
			slog.String("provider", d.Provider), slog.String("key", d.Key), slog.String("error", err.Error()))
	}
	writeError(w, status, msg)
}

// markRejection names who refused the delivery when d.Status is a 4xx (see
// RejectedByHeader).
func markRejection(d *delivery, by string) {
	if d.Status >= 400 && d.Status <= 499 {
		d.RejectedBy = by
		d.w.Header().Set(RejectedByHeader, by)
	}
}

func retryAfter(d time.Duration) string {
	secs := int64(math.Ceil(d.Seconds()))
	if secs < 1 {
		secs = 1
	}
	return strconv.FormatInt(secs, 10)
}

// writeError answers with a small JSON error. Its message comes from
// publicMessage, which never passes on secrets, signatures, bodies or
// storage detail.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// A struct, not a map: the same bytes for less reflection.
	_ = json.NewEncoder(w).Encode(errorBody{msg})
}

// errorBody is the JSON body of webhookd's own error answers.
type errorBody struct {
	Error string `json:"error"`
}

// report closes a delivery: its log line and Config.OnDelivery.
func (h *handler) report(d *delivery) {
	d.Duration = h.Now().Sub(d.start)
	if d.Outcome == "" {
		// The handler panicked; the recoverer answers 500.
		d.Outcome, d.Status = OutcomeError, http.StatusInternalServerError
	}
	h.logDelivery(d)
	h.endTrace(d)
	if h.OnDelivery != nil {
		h.OnDelivery(d.Delivery)
	}
}

// logDelivery writes the delivery line (docs/operating.md, "Logs"). It runs once per
// request, so it builds nothing when its level is disabled, and otherwise
// collects typed attributes in an array on the stack: the only allocation
// left is slog's own, for the attributes past the five a Record holds
// inline.
func (h *handler) logDelivery(d *delivery) {
	level := slog.LevelInfo
	if d.Status >= 500 {
		level = slog.LevelWarn
	}
	// Its span, if traced, gives the line a trace_id (tracing.LogHandler).
	ctx := d.ctx()
	if !h.Logger.Enabled(ctx, level) {
		return
	}
	var buf [14]slog.Attr
	attrs := append(buf[:0],
		slog.String("provider", d.Provider),
		slog.String("key", d.Key),
		slog.String("type", d.Type),
		slog.String("outcome", d.Outcome.String()),
		slog.Int("status", d.Status),
		slog.Duration("latency", d.Duration),
	)
	if d.RejectedBy != "" {
		attrs = append(attrs, slog.String("rejected_by", d.RejectedBy))
	}
	if d.Reason != "" {
		attrs = append(attrs, slog.String("reason", d.Reason))
	}
	if d.Items > 0 {
		attrs = append(attrs, slog.Int("items", d.Items))
	}
	if res := d.Dispatch; res != nil {
		attrs = append(attrs, slog.Int("attempts", res.Attempts), slog.Int("downstream_status", res.Status),
			slog.Duration("downstream_latency", res.Duration))
		if res.Err != nil {
			// dispatch redacts the URL's query and credentials from it.
			attrs = append(attrs, slog.String("downstream_error", res.Err.Error()))
		}
	}
	// The record is made here rather than by Logger.LogAttrs, which asks
	// runtime.Callers for the caller's frame on every line (a fifth of
	// the line's cost in BenchmarkDelivery) to serve HandlerOptions.AddSource:
	// webhookd's handlers never set it, and the delivery line's source would
	// always be this function.
	r := slog.NewRecord(time.Now(), level, "delivery", 0)
	r.AddAttrs(attrs...)
	_ = h.Logger.Handler().Handle(ctx, r)
}
