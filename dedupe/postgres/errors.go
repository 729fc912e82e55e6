package postgres

import (
	"errors"

	"github.com/webhookd/webhookd/dedupe"
)

// ErrInvalidDSN means Open was given a connection string the driver cannot
// parse. It does not quote the string (pgx's parse errors can hold the
// password), nor name where it came from: the caller says that.
var ErrInvalidDSN = errors.New("dedupe: not a valid Postgres connection string")

// Unreachable reports whether err, returned by a Store, says that Postgres
// did not answer (the driver or the network failed, the operation ran out
// of time, the store is closed) rather than what it answered: a logical
// outcome, an answer still being recorded (dedupe.ErrAnswerPending), a key
// that kept changing under a claim. The tiered store replays its local
// copy unchecked only then.
func Unreachable(err error) bool {
	var pe *pgError
	return errors.As(err, &pe) || errors.Is(err, dedupe.ErrClosed)
}
