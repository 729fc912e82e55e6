package statusapi

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/webhookd/webhookd/providers/internal/adapter"
)

// Config is an adapter's status check as its options set it and its New
// checks it (Setup): whether Confirm asks the API at all, under which
// URL, with which client and timeout. Every adapter with a status check
// takes the same three options, so they mean the same everywhere.
type Config struct {
	// raw is WithCheck's argument, checked by Setup.
	raw     string
	check   bool
	client  *http.Client
	timeout time.Duration
}

// NewConfig returns a Config without a check, whose calls are bounded by
// timeout unless WithTimeout says otherwise.
func NewConfig(timeout time.Duration) Config {
	return Config{timeout: timeout}
}

// WithCheck returns the option that enables the check of the Config of an
// A, found by cfg, under apiURL (Setup's default URL when empty).
func WithCheck[A any](cfg func(*A) *Config, apiURL string) adapter.Option[A] {
	return func(a *A) error {
		c := cfg(a)
		c.check, c.raw = true, apiURL
		return nil
	}
}

// WithHTTPClient returns the option that makes the check use client (its
// transport, for one) instead of a client of its own. Setup still makes it
// follow no redirect. A nil client is ignored.
func WithHTTPClient[A any](cfg func(*A) *Config, client *http.Client) adapter.Option[A] {
	return func(a *A) error {
		if client != nil {
			cfg(a).client = client
		}
		return nil
	}
}

// WithTimeout returns the option that bounds each status call by d;
// Setup refuses a d that is not positive.
func WithTimeout[A any](cfg func(*A) *Config, d time.Duration) adapter.Option[A] {
	return func(a *A) error {
		cfg(a).timeout = d
		return nil
	}
}

// Setup checks c once the options ran and returns the API base URL
// Confirm asks, nil when the check is not enabled. A timeout that is not
// positive is refused ("duitku: status timeout must be positive, got
// 0s"), and the API URL (defaultURL when none was given) must pass
// ParseAPIURL. Setup makes the client follow no redirect: the request
// carries a credential, and a 3xx counts as the API being unavailable.
func (c *Config) Setup(provider, defaultURL string) (*url.URL, error) {
	if c.timeout <= 0 {
		return nil, fmt.Errorf("%s: status timeout must be positive, got %s", provider, c.timeout)
	}
	if !c.check {
		return nil, nil
	}
	raw := c.raw
	if raw == "" {
		raw = defaultURL
	}
	u, err := ParseAPIURL(provider, raw)
	if err != nil {
		return nil, err
	}
	c.client = NoRedirects(c.client)
	return u, nil
}

// Call returns how Confirm calls the API: with c's client and timeout,
// reading at most maxBytes of an answer, every error wrapping unavailable.
func (c *Config) Call(maxBytes int, unavailable error) Call {
	return Call{Client: c.client, Timeout: c.timeout, MaxBytes: maxBytes, Unavailable: unavailable}
}
