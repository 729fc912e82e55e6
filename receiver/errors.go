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
	// ErrShuttingDown: the server is stopping and the delivery could not be
	// forwarded before the grace period ran out; its key was released.
	ErrShuttingDown = errors.New("webhookd is shutting down, retry later")
)

// outcome names what became of a delivery, for logs and metrics. The set is
// fixed, so it is safe as a metric label.
type outcome string

// The outcomes of a delivery.
const (
	OutcomeForwarded    outcome = "forwarded"
	OutcomeReplayed     outcome = "replayed"
	OutcomeConflict     outcome = "conflict"
	OutcomeMismatch     outcome = "mismatch"
	OutcomeUnauthorized outcome = "unauthorized"
	OutcomeBadRequest   outcome = "bad_request"
	OutcomeTooLarge     outcome = "too_large"
	OutcomeUnavailable  outcome = "unavailable"
	OutcomeRejected     outcome = "rejected"
	OutcomeNotFound     outcome = "not_found"
	OutcomeError        outcome = "error"
)

// Outcomes lists every value Delivery.Outcome takes, so that metrics can
// start each series at zero.
func Outcomes() []string {
	return []string{
		string(OutcomeForwarded), string(OutcomeReplayed), string(OutcomeConflict),
		string(OutcomeMismatch), string(OutcomeUnauthorized), string(OutcomeBadRequest),
		string(OutcomeTooLarge), string(OutcomeUnavailable), string(OutcomeRejected),
		string(OutcomeNotFound), string(OutcomeError),
	}
}

// classify is the one mapping from the pipeline's errors to an HTTP status
// (docs/contract.md, "What a provider's delivery gets back"). Rows are checked in
// order.
func classify(err error) (int, outcome) {
	for _, row := range statusTable {
		for _, target := range row.errs {
			if errors.Is(err, target) {
				return row.status, row.outcome
			}
		}
	}
	return http.StatusInternalServerError, OutcomeError
}

var statusTable = []struct {
	errs    []error
	status  int
	outcome outcome
}{
	{[]error{ErrUnknownProvider}, http.StatusNotFound, OutcomeNotFound},
	{[]error{ErrTooLarge}, http.StatusRequestEntityTooLarge, OutcomeTooLarge},
	{[]error{providers.ErrUnauthorized, providers.ErrMismatch}, http.StatusUnauthorized, OutcomeUnauthorized},
	{[]error{providers.ErrMalformed, ErrBadEvent, dedupe.ErrInvalidKey}, http.StatusBadRequest, OutcomeBadRequest},
	{[]error{dedupe.ErrFingerprintMismatch}, http.StatusUnprocessableEntity, OutcomeMismatch},
	{[]error{dedupe.ErrInFlight}, http.StatusConflict, OutcomeConflict},
	{[]error{ErrDownstreamUnavailable, ErrShuttingDown, dedupe.ErrUnavailable, dedupe.ErrClosed, providers.ErrUnavailable}, http.StatusServiceUnavailable, OutcomeUnavailable},
}
