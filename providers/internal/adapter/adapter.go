package adapter

import "time"

// Option configures an adapter of type A, built by its package's New. It
// returns an error for a value New must refuse, so that every adapter's
// options have one shape, whether or not they can fail.
type Option[A any] func(*A) error

// Apply runs opts on a in order and returns the first error.
func Apply[A any](a *A, opts []Option[A]) error {
	for _, opt := range opts {
		if err := opt(a); err != nil {
			return err
		}
	}
	return nil
}

// Clock is an adapter's source of the current time, for tolerance checks
// and Sign. The zero Clock reads time.Now; tests pin it next to a fixed
// signing vector.
type Clock struct {
	now func() time.Time
}

// Now returns the current time.
func (c Clock) Now() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

// Set makes c read now; a nil now is ignored.
func (c *Clock) Set(now func() time.Time) {
	if now != nil {
		c.now = now
	}
}
