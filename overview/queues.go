package overview

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// DefaultQueueMaxAge is how long QueueCounter reuses a read when its
// MaxAge is zero: a queue's figures are a few index entries each
// (dedupe.Queue.QueueStats), so they are read far more often than the
// FAILED count, yet a page reloaded by many operators, or a board of many
// sources sharing a queue, reads each queue once.
const DefaultQueueMaxAge = 5 * time.Second

// QueueReader is what QueueCounter needs of the store (dedupe.Queue).
type QueueReader interface {
	QueueStats(ctx context.Context, destination string) (dedupe.QueueStats, error)
}

// QueueCounter reads the queue destinations' depth and oldest waiting
// event, once per destination however many sources route to it, and keeps
// them for MaxAge. It is safe for concurrent use; concurrent pages share
// one read.
type QueueCounter struct {
	Store QueueReader
	// MaxAge is how long a read is reused: DefaultQueueMaxAge if zero, a
	// fresh read every time if negative.
	MaxAge time.Duration
	// Now is the clock of MaxAge; time.Now if nil.
	Now func() time.Time

	mu    sync.Mutex
	read  time.Time
	names []string // sorted: the destinations of the last read
	figs  map[string]QueueFigures
}

// Read returns the figures of each of destinations. A reload that changes
// the queue destinations makes the next Read a fresh one.
func (c *QueueCounter) Read(ctx context.Context, destinations []string) (map[string]QueueFigures, error) {
	names := slices.Sorted(slices.Values(destinations))
	names = slices.Compact(names)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	maxAge := c.MaxAge
	if maxAge == 0 {
		maxAge = DefaultQueueMaxAge
	}
	if c.figs != nil && maxAge > 0 && now().Sub(c.read) < maxAge && slices.Equal(names, c.names) {
		return c.figs, nil
	}
	figs := make(map[string]QueueFigures, len(names))
	for _, d := range names {
		st, err := c.Store.QueueStats(ctx, d)
		if err != nil {
			return nil, err
		}
		f := QueueFigures{Depth: st.Depth}
		if !st.Oldest.IsZero() {
			oldest := st.Oldest.UTC()
			f.Oldest = &oldest
		}
		figs[d] = f
	}
	c.figs, c.names, c.read = figs, names, now()
	return figs, nil
}

// AddQueues puts figs into sum: for each source, a figure for each queue
// destination queuesOf names for it (its routes reach them), whether or not
// it delivered to them in the window.
func AddQueues(sum *Summary, queuesOf map[string][]string, figs map[string]QueueFigures) {
	for i := range sum.Providers {
		ps := &sum.Providers[i]
		for _, d := range queuesOf[ps.Source] {
			f, ok := figs[d]
			if !ok {
				continue
			}
			j := slices.IndexFunc(ps.Destinations, func(ds DestinationSummary) bool { return ds.Destination == d })
			if j < 0 {
				ps.Destinations = append(ps.Destinations, DestinationSummary{Destination: d})
				j = len(ps.Destinations) - 1
			}
			ps.Destinations[j].Queue = &f
		}
		slices.SortFunc(ps.Destinations, func(a, b DestinationSummary) int {
			return strings.Compare(a.Destination, b.Destination)
		})
	}
}
