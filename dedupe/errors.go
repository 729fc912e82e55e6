package dedupe

import (
	"errors"
	"fmt"
)

// Sentinel errors. The receiver maps them to HTTP statuses.
var (
	// ErrInFlight means another attempt holds the key under an unexpired
	// lease; the accompanying Record says until when.
	ErrInFlight = errors.New("dedupe: event is in flight")
	// ErrFingerprintMismatch means the key exists but was first claimed
	// with a different payload fingerprint.
	ErrFingerprintMismatch = errors.New("dedupe: payload differs from the first delivery of this event")
	// ErrLeaseLost means the caller's lease was taken over (or the key
	// released or deleted) before it finished; its result is not recorded.
	ErrLeaseLost = errors.New("dedupe: lease lost to another attempt")
	// ErrNotFound means the key has no record.
	ErrNotFound = errors.New("dedupe: key not found")
	// ErrInvalidKey means the key is empty or longer than MaxKeyLen.
	ErrInvalidKey = errors.New("dedupe: invalid key")
	// ErrUnavailable means the store could not durably write (disk full,
	// I/O error). Nothing was changed; the caller should answer 503.
	ErrUnavailable = errors.New("dedupe: store unavailable")
	// ErrAnswerPending means the answer of an earlier delivery of the key
	// is still being recorded on this node (Unsettled); it wraps
	// ErrUnavailable, so the delivery is answered 503 with Retry-After,
	// and its retry finds the answer recorded (a replay).
	ErrAnswerPending = fmt.Errorf("%w: the answer of an earlier delivery of this event is still being recorded", ErrUnavailable)
	// ErrClosed means the store has been closed.
	ErrClosed = errors.New("dedupe: store closed")
	// ErrCorrupt means a stored record could not be decoded.
	ErrCorrupt = errors.New("dedupe: corrupt record")
	// ErrNoRequest means a redrive found no stored request body to
	// forward (WEBHOOKD_STORE_REQUESTS was off, or the body was over
	// MaxStoredRequest).
	ErrNoRequest = errors.New("dedupe: no request body stored for this event")
	// ErrInvalidCursor means a listing's cursor was not one that Recent
	// returned.
	ErrInvalidCursor = errors.New("dedupe: invalid cursor")
	// ErrInvalidDestination means a destination name is empty, longer
	// than MaxDestinationLen or holds anything but [a-z0-9-].
	ErrInvalidDestination = errors.New("dedupe: invalid destination name")
	// ErrNotQueueable means Requeue found a record that is not a FAILED
	// event of a queue destination.
	ErrNotQueueable = errors.New("dedupe: not a failed event of a queue destination")
)

// IsLogical reports whether err is one of the contract's outcomes (an
// answer about a key) rather than a storage failure. Backends use it to
// tell what they must wrap as ErrUnavailable from what they pass on.
func IsLogical(err error) bool {
	for _, e := range []error{ErrInFlight, ErrFingerprintMismatch, ErrLeaseLost, ErrNotFound, ErrInvalidKey, ErrCorrupt,
		ErrNoRequest, ErrInvalidCursor, ErrInvalidDestination, ErrNotQueueable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
