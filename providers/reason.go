package providers

import "errors"

// The reasons a refusal is given (docs/contract.md, "Refusals and the request
// log"): the reason field of the delivery log line and the request log, and
// the reason label of webhookd_refusals_total. The set is fixed, so it is
// safe as a metric label; Reasons lists it.
const (
	// ReasonSignatureMissing: the signature, token or a header it needs is
	// absent.
	ReasonSignatureMissing = "signature_missing"
	// ReasonSignatureInvalid: a signature or token is there but does not
	// verify, is not in its scheme's encoding, or the signed parts it
	// needs are unreadable.
	ReasonSignatureInvalid = "signature_invalid"
	// ReasonTimestamp: the signed timestamp is outside the tolerance (or
	// older than WEBHOOKD_RETENTION), or not a timestamp at all.
	ReasonTimestamp = "timestamp_outside_tolerance"
	// ReasonNotConfirmed: the gateway's status API contradicts the
	// notification.
	ReasonNotConfirmed = "not_confirmed"
	// ReasonAccountNotAllowed: signed, but for a merchant account or client
	// this webhookd does not serve.
	ReasonAccountNotAllowed = "account_not_allowed"
	// ReasonCertificateInvalid: the signing certificate is not on an
	// allowed host, does not chain to the roots, or is not the gateway's.
	ReasonCertificateInvalid = "certificate_invalid"
	// ReasonMalformed: verified, but the body does not parse.
	ReasonMalformed = "malformed"
	// ReasonNoEventKey: verified and parsed, but no usable event key (or
	// type) can be derived.
	ReasonNoEventKey = "no_event_key"
)

// Reasons lists every reason an adapter's error can carry, in the order of
// docs/contract.md.
func Reasons() []string {
	return []string{
		ReasonSignatureMissing, ReasonSignatureInvalid, ReasonTimestamp, ReasonNotConfirmed,
		ReasonAccountNotAllowed, ReasonCertificateInvalid, ReasonMalformed, ReasonNoEventKey,
	}
}

// The precise classes of ErrUnauthorized and ErrMalformed. Each reads exactly
// as the class it wraps, so an adapter's error wrapping one reads as it
// would wrapping the class ("delivery not authenticated: stripe: ..."): the
// reason goes to the log, the metrics and the request log, never into the
// gateway's answer. Adapters wrap the one
// that says which check failed.
var (
	// ErrSignatureMissing wraps ErrUnauthorized: ReasonSignatureMissing.
	ErrSignatureMissing error = &reasonError{ErrUnauthorized, ReasonSignatureMissing}
	// ErrSignatureInvalid wraps ErrUnauthorized: ReasonSignatureInvalid.
	ErrSignatureInvalid error = &reasonError{ErrUnauthorized, ReasonSignatureInvalid}
	// ErrTimestamp wraps ErrUnauthorized: ReasonTimestamp.
	ErrTimestamp error = &reasonError{ErrUnauthorized, ReasonTimestamp}
	// ErrAccountNotAllowed wraps ErrUnauthorized: ReasonAccountNotAllowed.
	ErrAccountNotAllowed error = &reasonError{ErrUnauthorized, ReasonAccountNotAllowed}
	// ErrCertificateInvalid wraps ErrUnauthorized: ReasonCertificateInvalid.
	ErrCertificateInvalid error = &reasonError{ErrUnauthorized, ReasonCertificateInvalid}
	// ErrNoEventKey wraps ErrMalformed: ReasonNoEventKey.
	ErrNoEventKey error = &reasonError{ErrMalformed, ReasonNoEventKey}
)

// reasonError is a class of adapter error with its reason.
type reasonError struct {
	class  error
	reason string
}

func (e *reasonError) Error() string { return e.class.Error() }
func (e *reasonError) Unwrap() error { return e.class }

// Reason names why an adapter's error refuses a delivery, one of Reasons(),
// or "" when err refuses nothing (nil, ErrUnavailable). An error that wraps
// only a class gets the class's broadest reason: ErrUnauthorized
// signature_invalid, ErrMalformed malformed, ErrMismatch not_confirmed.
// It is the one place an adapter's reasons are decided; the receiver asks
// it for 401 and 400 and names its own refusals (unknown_source, too_large,
// payload_mismatch) beside the statuses it maps them to.
func Reason(err error) string {
	if r := findReason(err); r != "" {
		return r
	}
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrMismatch):
		return ReasonNotConfirmed
	case errors.Is(err, ErrUnauthorized):
		return ReasonSignatureInvalid
	case errors.Is(err, ErrMalformed):
		return ReasonMalformed
	}
	return ""
}

// findReason walks err's chain for a reasonError by type assertion, not
// errors.As, whose target escapes: a refusal is what a flood of forged
// requests costs, and this is on its path.
func findReason(err error) string {
	for err != nil {
		switch e := err.(type) {
		case *reasonError:
			return e.reason
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if r := findReason(inner); r != "" {
					return r
				}
			}
			return ""
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return ""
		}
	}
	return ""
}
