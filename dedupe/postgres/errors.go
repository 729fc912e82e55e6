package postgres

import "errors"

// ErrInvalidDSN means Open was given a connection string the driver cannot
// parse. It does not quote the string (pgx's parse errors can hold the
// password), nor name where it came from: the caller says that.
var ErrInvalidDSN = errors.New("dedupe: not a valid Postgres connection string")
