package overview

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// MaxFailedCounted bounds one count of FAILED records: past it the overview
// says "at least". A pile that large is an incident whatever its exact size,
// and the count must not keep the page waiting.
const MaxFailedCounted = 10_000

// DefaultFailedMaxAge is how long a count of FAILED records serves later
// pages when FailedCounter.MaxAge is zero: finding them walks the store's
// index by creation time, as webhookd_store_records does, so it is reused as
// long.
const DefaultFailedMaxAge = 30 * time.Second

// RecentLister is what FailedCounter needs of the store (dedupe.Store).
type RecentLister interface {
	Recent(ctx context.Context, o dedupe.RecentOptions) ([]dedupe.Record, string, error)
}

// FailedCounter counts the store's FAILED records per provider, with the
// oldest of each, and keeps the count for MaxAge. It is safe for concurrent
// use; concurrent pages share one count.
type FailedCounter struct {
	Store RecentLister
	// MaxAge is how long a count is reused: DefaultFailedMaxAge if zero, a
	// fresh count every time if negative.
	MaxAge time.Duration
	// Now is the clock of MaxAge; time.Now if nil.
	Now func() time.Time

	mu      sync.Mutex
	counts  map[string]*Failed
	counted time.Time
}

// Count returns the FAILED records per provider (the part of each key
// before the first ':').
func (c *FailedCounter) Count(ctx context.Context) (map[string]*Failed, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	maxAge := c.MaxAge
	if maxAge == 0 {
		maxAge = DefaultFailedMaxAge
	}
	if c.counts != nil && maxAge > 0 && now().Sub(c.counted) < maxAge {
		return c.counts, nil
	}
	counts := map[string]*Failed{}
	o := dedupe.RecentOptions{State: dedupe.Failed, Limit: dedupe.MaxRecentLimit}
	seen := 0
	for {
		recs, next, err := c.Store.Recent(ctx, o)
		if err != nil {
			return nil, err
		}
		// Newest first: each record is the oldest of its provider so far.
		for i := range recs {
			provider, _, _ := strings.Cut(recs[i].Key, ":")
			f := counts[provider]
			if f == nil {
				f = &Failed{}
				counts[provider] = f
			}
			f.Waiting++
			created := recs[i].CreatedAt.UTC()
			f.Oldest, f.OldestKey = &created, recs[i].Key
		}
		seen += len(recs)
		if next == "" {
			break
		}
		if seen >= MaxFailedCounted {
			for _, f := range counts {
				f.AtLeast = true
			}
			break
		}
		o.Cursor = next
	}
	c.counts, c.counted = counts, now()
	return counts, nil
}

// AddFailed puts counts into sum's providers; a provider with none gets a
// zero Failed, and a provider that only the store knows of (records left
// from a configuration that served it) is not added: the overview is of
// the providers this process serves.
func AddFailed(sum *Summary, counts map[string]*Failed) {
	for i := range sum.Providers {
		f := counts[sum.Providers[i].Provider]
		if f == nil {
			f = &Failed{}
		}
		sum.Providers[i].Failed = f
	}
}
