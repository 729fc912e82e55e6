// Package statusapi makes the one bounded HTTP call an adapter's Confirm
// makes to its provider's status API (Midtrans, Duitku): under a timeout,
// without following redirects, reading at most a set number of bytes of
// the answer, and mapping every failure to the adapter's own "unavailable"
// sentinel, so that the receiver answers 503 and the provider retries.
//
// It never decides what an answer means: the adapter builds the request
// (its URL, signature and credentials) and reads the answer. Its errors
// never wrap the transport's, which quote the URL and would end up in the
// answer to the provider.
package statusapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// drainBytes is how much of an answer's remainder Do reads and discards,
// so that the connection can be reused.
const drainBytes = 4 << 10

// NoRedirects returns a copy of c (a new client when c is nil) that does
// not follow redirects: a status request carries the adapter's credentials,
// and its answer decides what is forwarded, so a 3xx counts as the API
// being unavailable. c itself is left as it was.
func NoRedirects(c *http.Client) *http.Client {
	client := &http.Client{}
	if c != nil {
		cp := *c
		client = &cp
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return client
}

// Call is one adapter's way of calling its status API.
type Call struct {
	// Client sends the request (see NoRedirects).
	Client *http.Client
	// Timeout bounds the whole call, answer included.
	Timeout time.Duration
	// MaxBytes is the largest answer read; a larger one is an error.
	MaxBytes int
	// Unavailable is the sentinel every error of Do wraps.
	Unavailable error
}

// Do sends r, bounded by ctx and c.Timeout, and returns the answer's HTTP
// status and, for a 200, its body. Its error wraps c.Unavailable and says
// which step failed: "(timed out after 5s)", "(request failed)", "(HTTP
// 502)" for any status but 200 (whatever the body), "(answer unreadable)"
// or "(answer larger than N bytes)". The status is returned with the error
// of a non-200 answer, so that a caller can give one (Midtrans's 404) a
// meaning of its own; it is 0 when no answer came.
func (c Call) Do(ctx context.Context, r *http.Request) (status int, answer []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	resp, err := c.Client.Do(r.WithContext(ctx))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, nil, fmt.Errorf("%w (timed out after %s)", c.Unavailable, c.Timeout)
		}
		return 0, nil, fmt.Errorf("%w (request failed)", c.Unavailable)
	}
	defer resp.Body.Close()
	answer, err = io.ReadAll(io.LimitReader(resp.Body, int64(c.MaxBytes)+1))
	_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
	switch {
	case resp.StatusCode != http.StatusOK:
		return resp.StatusCode, nil, fmt.Errorf("%w (HTTP %d)", c.Unavailable, resp.StatusCode)
	case err != nil:
		return resp.StatusCode, nil, fmt.Errorf("%w (answer unreadable)", c.Unavailable)
	case len(answer) > c.MaxBytes:
		return resp.StatusCode, nil, fmt.Errorf("%w (answer larger than %d bytes)", c.Unavailable, c.MaxBytes)
	}
	return resp.StatusCode, answer, nil
}
