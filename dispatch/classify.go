package dispatch

import "net/http"

// Outcome is what a forward amounted to, from the receiver's point of view.
// It decides both the provider's answer and what the dedupe store keeps.
type Outcome int

const (
	// Unavailable means the core service could not take the event now:
	// connection error, timeout, 5xx, 408, 409, 425, 429, a redirect, or any
	// answer this package does not understand. The receiver releases the
	// event key and answers 503 so that the provider retries later. It is the
	// zero value so that a Result nobody filled in is never mistaken for
	// success.
	Unavailable Outcome = iota
	// Delivered means the core service answered 2xx: it has the event.
	Delivered
	// Rejected means the core service answered a permanent 4xx (any 4xx
	// other than 408, 409, 425 and 429): sending the same bytes again will
	// not help.
	Rejected
)

// String returns the lower-case name used in logs and metrics labels.
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Rejected:
		return "rejected"
	default:
		return "unavailable"
	}
}

// Classify reduces one downstream answer (or the error that prevented one)
// to an Outcome. It is the only place answers are classified, so the retry
// policy, the receiver and the tests cannot disagree about what a status
// means.
//
// The status line decides. Once it has arrived the core service has acted on
// the request, so an error met after it, while reading the body (a
// connection closed short of its Content-Length, a body that stalls past the
// budget), does not change the outcome: calling a 2xx Unavailable would
// release the event key and let the provider's retry forward the event a
// second time, and a permanent 4xx stays permanent however its body ends.
// err matters only in the absence of a status (0): no answer at all is
// Unavailable, with or without an error to explain it.
func Classify(status int, err error) Outcome {
	switch {
	case status == 0:
		// err, if any, says why no answer came; either way there is none.
		return Unavailable
	case status >= 200 && status <= 299:
		return Delivered
	case status >= 400 && status <= 499 && !transient4xx(status):
		return Rejected
	default:
		// 1xx, 3xx, 5xx, the transient 4xx and nonsense statuses: the
		// provider should try again later, when someone may have fixed it.
		return Unavailable
	}
}

// transient4xx reports the 4xx statuses that describe the moment rather than
// the request: a timeout (408), a conflict with work in progress (409), a
// request sent too early (425) and rate limiting (429).
func transient4xx(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return false
}

// retryable reports whether repeating the same request within the budget can
// plausibly get a different answer. It is a subset of Unavailable: a redirect
// or a 1xx will come back the same on every attempt, so those are left for
// the provider's own retry instead of spending the budget on them.
func retryable(status int, err error) bool {
	if err != nil {
		return true
	}
	return status >= 500 || transient4xx(status)
}
