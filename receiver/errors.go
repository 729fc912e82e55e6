package receiver

import (
	"errors"
	"net/http"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/providers"
)

// Errors raised by the receiver itself; the rest come from the adapters and
// the store.
var (
	// ErrUnknownProvider: the route names no configured provider.
	ErrUnknownProvider = errors.New("unknown or unconfigured provider")
	// ErrTooLarge: the body exceeds the configured limit.
	ErrTooLarge = errors.New("request body too large")
	// ErrBadEvent: the adapter derived an event key or type that cannot be
	// stored or sent as a header.
	ErrBadEvent = errors.New("event key or type unusable")
	// ErrDownstreamUnavailable: the core service could not take the event.
	ErrDownstreamUnavailable = errors.New("downstream unavailable, retry later")
	// ErrBatchTimeout: a request split into items ran out of
	// Config.BatchTimeout before this item was settled: it was not claimed,
	// or its forward was cut and its key released.
	ErrBatchTimeout = errors.New("request out of time before this item, retry later")
	// ErrShuttingDown: the server is stopping and the delivery could not be
	// forwarded before the grace period ran out; its key was released.
	ErrShuttingDown = errors.New("webhookd is shutting down, retry later")
	// ErrBusy: the bodies being read already hold
	// Config.MaxPendingBodyBytes, and none gave enough back within
	// Config.BodyWait (body.go).
	ErrBusy = errors.New("too many request bodies being read, retry later")
	// ErrStoreUnavailable: the dedupe store could not answer (full disk,
	// I/O error, database down, or Config.StoreTimeout passed). It is all a
	// provider is told of a store failure: the cause, which can name files,
	// hosts or system errors, goes to the log.
	ErrStoreUnavailable = errors.New("store unavailable")
)

// Outcome names what became of a delivery, for the delivery log line's
// outcome field and the webhookd_deliveries_total{outcome} label. The set is
// fixed (Outcomes), so it is safe as a metric label.
//
// "Rejected" means one thing throughout webhookd: answered with a 4xx, by
// whoever RejectedByHeader names. The outcome of the core service's own
// permanent 4xx is therefore OutcomeCoreRejected ("core_rejected"), next to
// webhookd's own rejections (OutcomeMismatch, OutcomeUnauthorized, ...),
// which are "rejected_by" webhookd too.
type Outcome string

// String returns the outcome as logged and used as a metric label.
func (o Outcome) String() string { return string(o) }

// The outcomes of a delivery.
const (
	// OutcomeForwarded: forwarded, and the core service answered 2xx.
	OutcomeForwarded Outcome = "forwarded"
	// OutcomeReplayed: a duplicate of a COMPLETED or FAILED event,
	// answered with the stored response.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeConflict: the event is IN_FLIGHT on another delivery (409).
	OutcomeConflict Outcome = "conflict"
	// OutcomeMismatch: a known event key with another payload (422).
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeUnauthorized: the signature or token did not verify, or the
	// provider's status API disagrees (401).
	OutcomeUnauthorized Outcome = "unauthorized"
	// OutcomeBadRequest: verified, but no usable event (400).
	OutcomeBadRequest Outcome = "bad_request"
	// OutcomeTooLarge: the body exceeds the limit (413).
	OutcomeTooLarge Outcome = "too_large"
	// OutcomeUnavailable: the store, the core service or a provider's
	// status API could not be reached, or webhookd is stopping (503).
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeCoreRejected: forwarded, and the core service answered a
	// permanent 4xx (dispatch.Rejected), passed through.
	OutcomeCoreRejected Outcome = "core_rejected"
	// OutcomeNotFound: the route names no configured provider (404).
	OutcomeNotFound Outcome = "not_found"
	// OutcomeError: anything else, a handler panic included (500).
	OutcomeError Outcome = "error"
	// OutcomeUnrouted: verified, but no route wants the event: it is
	// acknowledged as a delivered one would be and forwarded nowhere.
	OutcomeUnrouted Outcome = "unrouted"
	// OutcomeBatch: a verified request split into items (a batch
	// provider's, a providers.Acknowledger), answered from its items'
	// outcomes; each item is counted with its own outcome besides.
	OutcomeBatch Outcome = "batch"
	// OutcomeQueued: stored QUEUED for a queue destination, which webhookd
	// delivers itself (package deliver); the gateway is acknowledged.
	OutcomeQueued Outcome = "queued"
)

// Outcomes lists every value Delivery.Outcome takes, so that metrics can
// start each series at zero.
func Outcomes() []Outcome {
	return []Outcome{
		OutcomeForwarded, OutcomeReplayed, OutcomeConflict, OutcomeMismatch, OutcomeUnauthorized,
		OutcomeBadRequest, OutcomeTooLarge, OutcomeUnavailable, OutcomeCoreRejected, OutcomeNotFound,
		OutcomeError, OutcomeBatch, OutcomeUnrouted, OutcomeQueued,
	}
}

// The reasons of the receiver's own refusals; the adapters' are
// providers.Reason's (docs/contract.md, "Refusals and the request log").
const (
	// ReasonUnknownSource: the route names no configured source (404).
	ReasonUnknownSource = "unknown_source"
	// ReasonTooLarge: the body exceeds the limit (413).
	ReasonTooLarge = "too_large"
	// ReasonPayloadMismatch: a known event key with another payload (422).
	ReasonPayloadMismatch = "payload_mismatch"
)

// Reasons lists every value Delivery.Reason takes but "", so that metrics
// can start each series at zero.
func Reasons() []string {
	return append(providers.Reasons(), ReasonUnknownSource, ReasonTooLarge, ReasonPayloadMismatch)
}

// reason names why err refuses a delivery, or "" when it is not a refusal
// (a 409, a 503, a 500): the row's own reason, else the adapter's
// (providers.Reason) for the 401 and 400 rows.
func reason(err error) string {
	row := lookup(err)
	switch {
	case row.reason != "":
		return row.reason
	case row.status == http.StatusUnauthorized, row.status == http.StatusBadRequest:
		return providers.Reason(err)
	}
	return ""
}

// classify is the one mapping from the pipeline's errors to an HTTP status
// (docs/contract.md, "What a provider's delivery gets back"). Rows are checked in
// order.
func classify(err error) (int, Outcome) {
	row := lookup(err)
	return row.status, row.outcome
}

// publicMessage is the text a provider is answered for err, and whether it
// hides err's own text (which then belongs in the log).
func publicMessage(err error) (msg string, hidden bool) {
	row := lookup(err)
	switch {
	case row.status == http.StatusInternalServerError:
		return http.StatusText(row.status), true
	case row.say != nil:
		return row.say.Error(), true
	case err == nil:
		return http.StatusText(row.status), false
	}
	return err.Error(), false
}

type statusRow struct {
	errs    []error
	status  int
	outcome Outcome
	// say, if set, is answered instead of the error's own text.
	say error
	// reason, if set, is the refusal's reason; else reason asks the
	// adapter's error.
	reason string
}

func lookup(err error) statusRow {
	for _, row := range statusTable {
		for _, target := range row.errs {
			if errors.Is(err, target) {
				return row
			}
		}
	}
	return statusRow{status: http.StatusInternalServerError, outcome: OutcomeError}
}

var statusTable = []statusRow{
	{[]error{ErrUnknownProvider}, http.StatusNotFound, OutcomeNotFound, nil, ReasonUnknownSource},
	{[]error{ErrTooLarge}, http.StatusRequestEntityTooLarge, OutcomeTooLarge, nil, ReasonTooLarge},
	{[]error{providers.ErrUnauthorized, providers.ErrMismatch}, http.StatusUnauthorized, OutcomeUnauthorized, nil, ""},
	{[]error{providers.ErrMalformed}, http.StatusBadRequest, OutcomeBadRequest, nil, ""},
	// The adapter derived a key or type that cannot be stored or sent.
	{[]error{ErrBadEvent, dedupe.ErrInvalidKey}, http.StatusBadRequest, OutcomeBadRequest, nil, providers.ReasonNoEventKey},
	{[]error{dedupe.ErrFingerprintMismatch}, http.StatusUnprocessableEntity, OutcomeMismatch, nil, ReasonPayloadMismatch},
	{[]error{dedupe.ErrInFlight}, http.StatusConflict, OutcomeConflict, nil, ""},
	{[]error{ErrDownstreamUnavailable, ErrShuttingDown, ErrBatchTimeout, ErrBusy, ErrPaused, providers.ErrUnavailable}, http.StatusServiceUnavailable, OutcomeUnavailable, nil, ""},
	// Store errors carry storage detail (errno text, paths, hosts).
	{[]error{ErrStoreUnavailable, dedupe.ErrUnavailable, dedupe.ErrClosed}, http.StatusServiceUnavailable, OutcomeUnavailable, ErrStoreUnavailable, ""},
}

// The dependencies a delivery may find unavailable, as Delivery.Failed
// names them (and the dependency label of
// webhookd_dependency_failures_total).
const (
	// DependencyCore: the core service did not take the forward.
	DependencyCore = "core"
	// DependencyStore: the dedupe store could not be read or written.
	DependencyStore = "store"
	// DependencyProviderAPI: a provider's API that verification needs (a
	// certificate download, a status API) could not be reached.
	DependencyProviderAPI = "provider_api"
)

// dependency names the dependency whose failure err reports, or "".
func dependency(err error) string {
	switch {
	case errors.Is(err, ErrShuttingDown), errors.Is(err, ErrBatchTimeout), errors.Is(err, ErrBusy):
		return ""
	case errors.Is(err, ErrDownstreamUnavailable):
		return DependencyCore
	case errors.Is(err, providers.ErrUnavailable):
		return DependencyProviderAPI
	case errors.Is(err, ErrStoreUnavailable), errors.Is(err, dedupe.ErrUnavailable), errors.Is(err, dedupe.ErrClosed):
		return DependencyStore
	}
	return ""
}
