package signature

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrTooOld means a signed timestamp is older than the allowed tolerance,
	// so the delivery may be a replay of a captured request.
	ErrTooOld = errors.New("signature: timestamp older than tolerance")
	// ErrInvalidTolerance means CheckTimestamp was called with a tolerance
	// that is zero or negative.
	ErrInvalidTolerance = errors.New("signature: tolerance must be positive")
)

// CheckTimestamp reports whether the signed timestamp ts is recent enough at
// time now: it returns an error wrapping ErrTooOld when ts is more than
// tolerance before now, and nil otherwise.
//
// The check is one-sided, as in stripe-go: a timestamp in the future is
// accepted. A replay can only ever present an old timestamp, and a forged
// future timestamp is useless without the signing key, so rejecting future
// times would only turn a sender's fast clock (or the receiver's slow one)
// into lost deliveries.
//
// tolerance must be positive; otherwise CheckTimestamp returns
// ErrInvalidTolerance and so fails closed. Zero is refused rather than given
// a meaning because the meaning is ambiguous: Stripe's documentation says a
// tolerance of 0 disables the check, while stripe-go's ValidatePayloadWithTolerance
// treats it as "reject everything" and ConstructEventWithTolerance as "use the
// 5 minute default". A caller that wants no recency check should not call
// this function.
func CheckTimestamp(ts, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		return ErrInvalidTolerance
	}
	// Sub saturates instead of overflowing, so an absurdly old ts (such as
	// the zero Time) still compares as too old.
	if age := now.Sub(ts); age > tolerance {
		return fmt.Errorf("%w (age %s, tolerance %s)", ErrTooOld, age.Round(time.Second), tolerance)
	}
	return nil
}
