package paypal

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// FailedFetchPause is how long a certificate URL whose fetch failed is not
// fetched again: the deliveries naming it meanwhile answer 503 with
// Retry-After (ErrCertUnavailable), and PayPal retries them.
const FailedFetchPause = 30 * time.Second

// MaxFailedURLs bounds how many certificate URLs whose fetch failed are
// remembered at once. While that many failed within FailedFetchPause, a URL
// not in the cache is not fetched either (503): anyone can name a new
// certificate URL on an allowed host, and this caps the fetches such
// requests cause at MaxFailedURLs per FailedFetchPause.
const MaxFailedURLs = 64

// certCache keeps checked leaf certificates by URL, at most max of them,
// and remembers failed fetches. Only a certificate that chains to the
// roots and is PayPal's message-verification certificate is kept, and when
// it is full the one that verified a signature longest ago (or never) goes
// first, so a flood of other URLs, which can only name certificates that
// verify nothing, never evicts the one PayPal signs with.
type certCache struct {
	mu     sync.Mutex
	max    int
	good   map[string]*cachedCert
	failed map[string]time.Time // URL: when its fetch failed
	flight singleflight.Group
}

// cachedCert is a kept certificate and when it last verified a signature
// (zero: never).
type cachedCert struct {
	leaf     *x509.Certificate
	verified time.Time
}

func newCertCache(max int) *certCache {
	if max <= 0 {
		max = DefaultCacheSize
	}
	return &certCache{max: max, good: map[string]*cachedCert{}, failed: map[string]time.Time{}}
}

// get returns the cached certificate of key, or runs fetch once for all the
// callers that ask for key meanwhile. A URL whose fetch failed less than
// FailedFetchPause ago is not fetched: ErrCertUnavailable. A caller whose
// ctx ends first stops waiting with ErrCertUnavailable; the fetch goes on
// for the others.
func (c *certCache) get(ctx context.Context, key string, now func() time.Time, fetch func() (*x509.Certificate, error)) (*x509.Certificate, error) {
	c.mu.Lock()
	if e, ok := c.good[key]; ok {
		c.mu.Unlock()
		return e.leaf, nil
	}
	if err := c.pausedLocked(key, now()); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Unlock()
	ch := c.flight.DoChan(key, func() (any, error) { return c.fetchOnce(key, now, fetch) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*x509.Certificate), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w (%s)", ErrCertUnavailable, fetchFailure(ctx.Err()))
	}
}

// fetchOnce is the flight of key: it fetches unless, since its caller
// looked, another flight of key has cached the certificate or failed (a
// flight that ended between the caller's look and its DoChan), so that
// callers arriving together cost one fetch.
func (c *certCache) fetchOnce(key string, now func() time.Time, fetch func() (*x509.Certificate, error)) (*x509.Certificate, error) {
	c.mu.Lock()
	if e, ok := c.good[key]; ok {
		c.mu.Unlock()
		return e.leaf, nil
	}
	if err := c.pausedLocked(key, now()); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Unlock()
	leaf, err := fetch()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed[key] = now()
		return nil, err
	}
	c.addLocked(key, leaf)
	return leaf, nil
}

// pausedLocked says why key must not be fetched now, or nil: its own fetch
// failed less than FailedFetchPause ago, or MaxFailedURLs others did.
func (c *certCache) pausedLocked(key string, now time.Time) error {
	for k, at := range c.failed {
		if now.Sub(at) >= FailedFetchPause {
			delete(c.failed, k)
		}
	}
	if at, ok := c.failed[key]; ok {
		wait := FailedFetchPause - now.Sub(at)
		return fmt.Errorf("%w (its fetch failed; not tried again for %s)", ErrCertUnavailable, wait.Round(time.Second))
	}
	if len(c.failed) >= MaxFailedURLs {
		return fmt.Errorf("%w (%d certificate URLs failed in %s; no other is fetched meanwhile)", ErrCertUnavailable, len(c.failed), FailedFetchPause)
	}
	return nil
}

// addLocked keeps leaf under key, making room by dropping the certificate
// that verified a signature longest ago (never, first).
func (c *certCache) addLocked(key string, leaf *x509.Certificate) {
	if _, ok := c.good[key]; !ok && len(c.good) >= c.max {
		var oldest string
		for k, e := range c.good {
			if oldest == "" || e.verified.Before(c.good[oldest].verified) {
				oldest = k
			}
		}
		delete(c.good, oldest)
	}
	c.good[key] = &cachedCert{leaf: leaf}
}

// verified records that the certificate under key verified a signature at
// now, which keeps it cached ahead of the others.
func (c *certCache) verified(key string, now time.Time) {
	c.mu.Lock()
	if e, ok := c.good[key]; ok {
		e.verified = now
	}
	c.mu.Unlock()
}

// forget drops key, so that its certificate is fetched again.
func (c *certCache) forget(key string) {
	c.mu.Lock()
	delete(c.good, key)
	c.mu.Unlock()
}
